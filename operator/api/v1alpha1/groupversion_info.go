// Package v1alpha1 is the operator's API: KarmadaQuotaInstallation, karmada-quota installed on one Karmada.
// +kubebuilder:object:generate=true
// +groupName=operator.quota.karmada.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API's group and version.
	GroupVersion = schema.GroupVersion{Group: "operator.quota.karmada.io", Version: "v1alpha1"}

	// SchemeBuilder adds the API's types to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
