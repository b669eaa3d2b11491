//go:build tools

package main

import (
	_ "github.com/google/go-containerregistry/pkg/name"
	_ "github.com/google/go-containerregistry/pkg/v1"
	_ "github.com/google/go-containerregistry/pkg/v1/empty"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/google/go-containerregistry/pkg/v1/tarball"
	_ "helm.sh/helm/v3/pkg/action"
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/chartutil"
	_ "helm.sh/helm/v3/pkg/engine"
	_ "helm.sh/helm/v3/pkg/lint"
	_ "helm.sh/helm/v3/pkg/cli"
	_ "k8s.io/cli-runtime/pkg/genericclioptions"
	_ "k8s.io/cli-runtime/pkg/printers"
	_ "k8s.io/kubectl/pkg/describe"
)
