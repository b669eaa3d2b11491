// Command quota-webhook serves karmada-quota's validating webhooks for the karmada-apiserver.
package main

import (
	"os"

	"github.com/karmada-quota/karmada-quota/cmd/quota-webhook/app"
)

func main() {
	if err := app.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
