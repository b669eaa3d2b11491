// Command quota-controller counts what each namespace's ResourceBindings use into its KarmadaQuotas' status and
// settles the reservations the webhook made.
package main

import (
	"os"

	"github.com/karmada-quota/karmada-quota/cmd/quota-controller/app"
)

func main() {
	if err := app.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
