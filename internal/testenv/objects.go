package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// Quota builds a KarmadaQuota without scope.
func Quota(ns, name string, hard corev1.ResourceList) *quotav1alpha1.KarmadaQuota {
	return &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard},
	}
}

// CreateBinding creates a binding as Karmada's detector does, unscheduled unless the builder placed it; UID,
// generation and resourceVersion are the apiserver's to set.
func CreateBinding(ctx context.Context, c client.Client, b *utiltesting.BindingWrapper) (*workv1alpha2.ResourceBinding, error) {
	rb := b.Obj()
	rb.UID, rb.Generation, rb.ResourceVersion = "", 0, ""
	return rb, c.Create(ctx, rb)
}

// ChartCRDInGroup is the chart's CRD in file (files/crds), served in group instead of its own, with no short names
// or categories to clash with the original's: a copy to change and install beside it.
func ChartCRDInGroup(file, group string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "deploy", "charts", "karmada-quota", "files", "crds", file))
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	crd.Name = crd.Spec.Names.Plural + "." + group
	crd.Spec.Group = group
	crd.Spec.Names.ShortNames, crd.Spec.Names.Categories = nil, nil
	return crd, nil
}
