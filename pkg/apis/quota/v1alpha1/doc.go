// Package v1alpha1 holds the KarmadaQuota API: hard limits for one namespace across every member cluster of a
// Karmada federation, and the status the admission webhook and the controller keep for it.
//
// +kubebuilder:object:generate=true
// +groupName=quota.karmada.io
package v1alpha1
