// Package app is the karmada-quota-operator command: the operator itself, and the install phases the Helm
// chart's hook Jobs run.
package app

import (
	"github.com/spf13/cobra"
)

// NewCommand returns the karmada-quota-operator command.
func NewCommand() *cobra.Command {
	cmd := newOperatorCommand()
	cmd.AddCommand(newInstallCommand())
	return cmd
}
