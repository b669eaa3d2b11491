// Command karmada-quota-operator installs, upgrades and repairs karmada-quota on a Karmada from one custom
// resource; `karmada-quota-operator install <phase>` runs one installation phase, as the Helm chart's hook Jobs do.
package main

import (
	"os"

	"github.com/karmada-quota/karmada-quota/operator/cmd/karmada-quota-operator/app"
)

func main() {
	if err := app.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
