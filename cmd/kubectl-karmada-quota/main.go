// Command kubectl-karmada-quota is the kubectl plugin `kubectl karmada quota`: it reads KarmadaQuotas on the
// karmada-apiserver (describe, list, top, why). Install it with
// `go install github.com/karmada-quota/karmada-quota/cmd/kubectl-karmada-quota@<version>` or krew.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := kubectlplugin.Run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
