// compose-check loads a compose file with compose-go, the parser Docker Compose v2 itself
// uses (github.com/compose-spec/compose-go): schema validation, interpolation from the
// environment (a missing ${VAR:?} is an error), extension fields and merge keys, depends_on
// and profile checks. It prints the loaded project's service names, one a line, sorted;
// any error goes to stderr with exit status 1.
//
//	compose-check docker-compose.yml [profile...]
//
// tests/integration/docker/test_compose_stack.py builds and runs it (no container engine
// runs here, so this is how the stack's file is checked by a real compose parser).
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-check FILE [PROFILE...]")
		os.Exit(2)
	}
	options, err := cli.NewProjectOptions(
		[]string{os.Args[1]},
		cli.WithOsEnv,
		cli.WithProfiles(os.Args[2:]),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	names := make([]string, 0, len(project.Services))
	for name := range project.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Println(name)
	}
}
