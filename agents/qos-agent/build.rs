//! Feature `sai`: the SAI bindings, generated with bindgen from the SAI headers named by
//! `SAI_INCLUDE_DIR` (the headers the SAI library was built with: on a switch
//! `/usr/include/sai`; in the tests those of SONiC's virtual SAI, libsaivs). Nothing of the ABI
//! is declared by hand: the types, the method tables, the enums, the status codes and a loader
//! for `sai_api_initialize` / `sai_api_query` / `sai_object_type_query` all come from `sai.h`
//! and the headers it includes. Without the feature this script does nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "sai")]
    sai::generate();
}

#[cfg(feature = "sai")]
mod sai {
    use std::env;
    use std::fmt::Write as _;
    use std::path::{Path, PathBuf};
    use std::process::exit;

    const INCLUDE_VAR: &str = "SAI_INCLUDE_DIR";
    /// Prefix of the C enum constants that carry the status codes' values (below).
    const STATUS_PREFIX: &str = "QOS_AGENT_";

    fn fail(message: &str) -> ! {
        eprintln!("qos-agent (feature sai): {message}");
        exit(1);
    }

    pub fn generate() {
        println!("cargo:rerun-if-env-changed={INCLUDE_VAR}");
        let Some(dir) = env::var_os(INCLUDE_VAR) else {
            fail(&format!(
                "{INCLUDE_VAR} is not set: point it at the SAI headers (the directory holding sai.h, \
                 e.g. /usr/include/sai on a switch, or the include/sai of SONiC's orchagent runtime)"
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
        // The tests build their fake SAI library from the same headers, with the same compiler
        // target.
        let joined: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        println!("cargo:rustc-env=SAI_INCLUDE_PATH={}", joined.join(":"));
        println!("cargo:rustc-env=SAI_BUILD_TARGET={}", env::var("TARGET").unwrap_or_default());
        let statuses = status_names(&dir.join("saistatus.h"));
        let bindings = bindgen::Builder::default()
            .header_contents("qos_agent_sai.h", &status_header(&statuses))
            .clang_args(dirs.iter().map(|d| format!("-I{}", d.display())))
            // The calls and types the backend uses, and what they need.
            .allowlist_function("sai_api_initialize|sai_api_query|sai_object_type_query")
            .allowlist_type("sai_switch_api_t|sai_queue_api_t|sai_wred_api_t|sai_attribute_t")
            .allowlist_type("sai_service_method_table_t|sai_api_t|sai_object_type_t")
            .allowlist_type("sai_switch_attr_t|sai_queue_attr_t|sai_queue_stat_t|sai_wred_attr_t")
            // The tests play the platform that owns the switch (create it, find a port's queues,
            // create WRED profiles): the port's method table and attributes.
            .allowlist_type("sai_port_api_t|sai_port_attr_t|sai_queue_type_t|sai_ecn_mark_mode_t")
            .allowlist_type("qos_agent_sai_status_codes")
            .prepend_enum_name(false)
            .raw_line(status_table(&statuses))
            // The three functions are resolved in the library at run time.
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

    /// The status codes `saistatus.h` defines (`#define SAI_STATUS_<NAME> ...`), without the
    /// function-like macros (`SAI_STATUS_CODE(_S_)`, `SAI_STATUS_IS_...(x)`).
    fn status_names(header: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(header)
            .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", header.display())));
        let mut names: Vec<String> = text
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("#define")?.split_whitespace().next())
            .filter(|name| name.starts_with("SAI_STATUS_") && !name.contains('('))
            .map(str::to_string)
            .collect();
        names.dedup();
        if !names.iter().any(|n| n == "SAI_STATUS_SUCCESS") {
            fail(&format!("{} defines no SAI_STATUS_SUCCESS", header.display()));
        }
        names
    }

    /// `sai.h`, and one C enum constant per status code: the macros expand to expressions
    /// (`SAI_STATUS_CODE(0x11L)`) bindgen does not evaluate, but clang evaluates an enum
    /// constant's initialiser, so the values are the headers' own.
    fn status_header(names: &[String]) -> String {
        let mut header = String::from("#include <sai.h>\nenum qos_agent_sai_status_codes {\n");
        for name in names {
            let _ = writeln!(header, "    {STATUS_PREFIX}{name} = {name},");
        }
        header.push_str("};\n");
        header
    }

    /// `SAI_STATUS_NAMES`: each code's value (from the enum above) and its name.
    fn status_table(names: &[String]) -> String {
        let mut table = String::from(
            "/// Every status code of `saistatus.h`: value and name.\n\
             pub const SAI_STATUS_NAMES: &[(sai_status_t, &str)] = &[\n",
        );
        for name in names {
            let _ = writeln!(table, "    ({STATUS_PREFIX}{name} as sai_status_t, \"{name}\"),");
        }
        table.push_str("];");
        table
    }
}
