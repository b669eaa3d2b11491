// Package scheme is the one runtime.Scheme the binaries share: Kubernetes' built-in types, Karmada's clusters,
// work (Works and bindings) and policy APIs, and KarmadaQuota.
package scheme

import (
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// Scheme knows every type karmada-quota reads or writes.
var Scheme = runtime.NewScheme()

var builder = runtime.NewSchemeBuilder(
	clientgoscheme.AddToScheme,
	clusterv1alpha1.AddToScheme,
	workv1alpha1.AddToScheme,
	workv1alpha2.AddToScheme,
	policyv1alpha1.AddToScheme,
	quotav1alpha1.AddToScheme,
)

// AddToScheme adds those types to another scheme, for tools that know more types besides.
var AddToScheme = builder.AddToScheme

func init() {
	utilruntime.Must(AddToScheme(Scheme))
}
