package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of KarmadaQuota.
	GroupVersion = schema.GroupVersion{Group: "quota.karmada.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this group version with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&KarmadaQuota{}, &KarmadaQuotaList{}, &KarmadaQuotaLedger{}, &KarmadaQuotaLedgerList{},
		&KarmadaBusinessQuota{}, &KarmadaBusinessQuotaList{}, &KarmadaBusinessQuotaLedger{}, &KarmadaBusinessQuotaLedgerList{},
		&AppliedBusinessQuota{}, &AppliedBusinessQuotaList{})
}
