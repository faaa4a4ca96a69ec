//! Feature `sai`: the SAI bindings, generated with bindgen from the SAI headers named by
//! `SAI_INCLUDE_DIR` (on a switch `/usr/include/sai`; in CI the SAI 1.18 headers checked out
//! beside the repository). Nothing of the ABI is declared by hand: the types, the method
//! tables, the enums and a loader for `sai_api_initialize` / `sai_api_query` all come from
//! `sai.h` and the headers it includes. Without the feature this script does nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "sai")]
    sai::generate();
}

#[cfg(feature = "sai")]
mod sai {
    use std::env;
    use std::path::PathBuf;
    use std::process::exit;

    const INCLUDE_VAR: &str = "SAI_INCLUDE_DIR";

    fn fail(message: &str) -> ! {
        eprintln!("qos-agent (feature sai): {message}");
        exit(1);
    }

    pub fn generate() {
        println!("cargo:rerun-if-env-changed={INCLUDE_VAR}");
        let Some(dir) = env::var_os(INCLUDE_VAR) else {
            fail(&format!(
                "{INCLUDE_VAR} is not set: point it at the SAI headers (the directory holding sai.h, \
                 e.g. /usr/include/sai on a switch, or shared/sai/inc beside the repository)"
            ));
        };
        let dir = PathBuf::from(dir);
        let dir = dir.canonicalize().unwrap_or_else(|e| {
            fail(&format!("{INCLUDE_VAR}={} cannot be opened: {e}", dir.display()));
        });
        if !dir.join("sai.h").is_file() {
            fail(&format!("{INCLUDE_VAR}={} holds no sai.h", dir.display()));
        }
        // SAI's repository keeps the headers sai.h includes from `experimental/` beside `inc/`;
        // an installed SAI (/usr/include/sai) has them all in one directory.
        let mut dirs = vec![dir.clone()];
        dirs.extend(dir.parent().map(|p| p.join("experimental")).filter(|e| e.is_dir()));
        for d in &dirs {
            println!("cargo:rerun-if-changed={}", d.display());
        }
        // The tests build their SAI library from the same headers, with the same compiler
        // target.
        let joined: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        println!("cargo:rustc-env=SAI_INCLUDE_PATH={}", joined.join(":"));
        println!("cargo:rustc-env=SAI_BUILD_TARGET={}", env::var("TARGET").unwrap_or_default());
        let bindings = bindgen::Builder::default()
            .header_contents("qos_agent_sai.h", "#include <sai.h>\n")
            .clang_args(dirs.iter().map(|d| format!("-I{}", d.display())))
            // The calls and types the backend uses, and what they need.
            .allowlist_function("sai_api_initialize|sai_api_query")
            .allowlist_type("sai_queue_api_t|sai_wred_api_t|sai_attribute_t|sai_service_method_table_t")
            .allowlist_type("sai_api_t|sai_queue_stat_t|sai_wred_attr_t")
            .allowlist_var("SAI_STATUS_SUCCESS")
            .prepend_enum_name(false)
            // sai_api_initialize and sai_api_query are resolved in the library at run time.
            .dynamic_library_name("SaiLibraryCalls")
            .dynamic_link_require_all(true)
            .layout_tests(true)
            .generate()
            .unwrap_or_else(|e| fail(&format!("bindgen on {}/sai.h failed: {e}", dir.display())));
        let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_else(|| fail("OUT_DIR is not set")));
        bindings
            .write_to_file(out.join("sai_bindings.rs"))
            .unwrap_or_else(|e| fail(&format!("cannot write the SAI bindings: {e}")));
    }
}
