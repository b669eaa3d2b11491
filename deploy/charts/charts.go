// Package charts carries karmada-quota's Helm chart inside the binaries that install it, so that the operator
// installs exactly the objects the chart does: one source for both.
package charts

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// KarmadaQuotaName is the chart's folder name.
const KarmadaQuotaName = "karmada-quota"

// files holds the chart. "all:" keeps the files whose names start with "_" (_helpers.tpl).
//
//go:embed all:karmada-quota
var files embed.FS

// KarmadaQuota loads the karmada-quota chart.
func KarmadaQuota() (*chart.Chart, error) {
	var buffered []*loader.BufferedFile
	err := fs.WalkDir(files, KarmadaQuotaName, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := relative(KarmadaQuotaName, p)
		buffered = append(buffered, &loader.BufferedFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded chart: %w", err)
	}
	ch, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("loading the embedded chart: %w", err)
	}
	return ch, nil
}

func relative(root, p string) (string, bool) {
	if len(p) > len(root) && p[:len(root)] == root && p[len(root)] == '/' {
		return path.Clean(p[len(root)+1:]), true
	}
	return p, false
}
