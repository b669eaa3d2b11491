// Command chartschema writes the values.schema.json of karmada-quota's chart from its values.yaml and
// hack/chartschema/constraints.yaml. `make generate` runs it.
//
//	go run ./hack/chartschema/cmd --chart deploy/charts/karmada-quota
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/karmada-quota/karmada-quota/hack/chartschema"
)

func main() {
	chart := flag.String("chart", "deploy/charts/karmada-quota", "Folder of the chart.")
	flag.Parse()
	if err := run(*chart); err != nil {
		fmt.Fprintln(os.Stderr, "chartschema:", err)
		os.Exit(1)
	}
}

func run(chart string) error {
	values, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		return err
	}
	schema, err := chartschema.Generate(values)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(chart, "values.schema.json"), schema, 0o644)
}
