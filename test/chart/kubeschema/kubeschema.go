// Package kubeschema checks Kubernetes objects offline, the way an API server would on create, so that a chart's
// rendering can be checked without a cluster:
//
//   - built-in kinds against the OpenAPI schema client-go embeds (structured-merge-diff refuses unknown and mistyped
//     fields), then by a strict decode into their Go types, then their metadata with apimachinery's validation;
//   - CustomResourceDefinitions with apiextensions-apiserver's own create validation, which requires a structural
//     schema, valid CEL rules and pruned defaults;
//   - custom resources against the schema of a CRD added to the Checker: pruning reports unknown fields (in metadata
//     too), defaults are applied, then the OpenAPI validator, the list-type invariants and the CRD's CEL rules run.
//
// What it cannot know offline: the validation Kubernetes' API server code does beyond the schema for built-in kinds
// (k8s.io/kubernetes/pkg/apis/*/validation: e.g. selector/label agreement, port name syntax), admission, and
// anything that depends on other objects in a cluster.
package kubeschema

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// crdKind is the GroupVersionKind of a CustomResourceDefinition.
var crdKind = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

// clusterScoped are the built-in kinds that live outside namespaces. Every other built-in kind is namespaced.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
}

// Checker checks objects; custom resources need the CRD of their kind added first.
type Checker struct {
	builtin managedfields.TypeConverter
	custom  map[schema.GroupVersionKind]*customKind
}

// customKind is what checking one served version of a CRD takes.
type customKind struct {
	crd        string
	namespaced bool
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// New returns a Checker that knows the built-in kinds of client-go's scheme.
func New() *Checker {
	return &Checker{
		builtin: applyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
		custom:  map[schema.GroupVersionKind]*customKind{},
	}
}

// Kinds are the custom kinds the Checker knows.
func (c *Checker) Kinds() []schema.GroupVersionKind {
	kinds := make([]schema.GroupVersionKind, 0, len(c.custom))
	for gvk := range c.custom {
		kinds = append(kinds, gvk)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	return kinds
}

// AddCRD checks a CustomResourceDefinition and, if it is valid, learns the kinds it serves.
func (c *Checker) AddCRD(obj *unstructured.Unstructured) error {
	crd, err := checkCRD(obj)
	if err != nil {
		return err
	}
	for _, version := range crd.Spec.Versions {
		if !version.Served {
			continue
		}
		props, structural, err := versionSchema(crd, version)
		if err != nil {
			return err
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(props)
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition %s version %s: %w", crd.Name, version.Name, err)
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version.Name, Kind: crd.Spec.Names.Kind}
		c.custom[gvk] = &customKind{
			crd:        crd.Name,
			namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			structural: structural,
			validator:  validator,
			cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
		}
	}
	return nil
}

// Check returns every problem an API server would find with obj on create, as far as its schema tells, or an error
// saying no schema is known for its kind: nothing passes unchecked.
func (c *Checker) Check(obj *unstructured.Unstructured) error {
	obj, err := asServerDecodes(obj)
	if err != nil {
		return err
	}
	gvk := obj.GroupVersionKind()
	switch {
	case gvk == crdKind:
		_, err = checkCRD(obj)
		return err
	case c.custom[gvk] != nil:
		err = c.checkCustom(obj, c.custom[gvk])
	case clientgoscheme.Scheme.Recognizes(gvk):
		err = c.checkBuiltin(obj)
	default:
		return fmt.Errorf("%s: no schema is known for %s (a custom resource needs its CRD added)", describe(obj), gvk)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", describe(obj), err)
	}
	return nil
}

// asServerDecodes is obj as the API server reads it from a request: JSON, with integers as int64 and other numbers as
// float64 (CEL rules and the schema validators tell them apart).
func asServerDecodes(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", describe(obj), err)
	}
	out := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(raw, &out.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", describe(obj), err)
	}
	return out, nil
}

func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", obj.GetKind(), ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
}

func (c *Checker) checkBuiltin(obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	// The OpenAPI schema: unknown fields, wrong types, duplicate list-map keys.
	if _, err := c.builtin.ObjectToTyped(obj); err != nil {
		return fmt.Errorf("against the OpenAPI schema of %s: %w", gvk, err)
	}
	// The Go type: a second opinion on the same, from the structs the API server decodes into.
	typed, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, typed, true); err != nil {
		return fmt.Errorf("decoding strictly into %T: %w", typed, err)
	}
	namespaced := !clusterScoped[gvk.GroupKind()]
	errs := metavalidation.ValidateObjectMetaAccessor(obj, namespaced, nameValidation(gvk.GroupKind()), field.NewPath("metadata"))
	return errs.ToAggregate()
}

// nameValidation is the name rule of a built-in kind, as its API validation applies it.
func nameValidation(gk schema.GroupKind) metavalidation.ValidateNameFunc {
	switch {
	case gk.Group == "" && gk.Kind == "Service":
		return metavalidation.NameIsDNS1035Label
	case gk.Group == "" && gk.Kind == "Namespace":
		return metavalidation.ValidateNamespaceName
	case gk.Group == "rbac.authorization.k8s.io":
		return func(name string, _ bool) []string { return path.IsValidPathSegmentName(name) }
	default:
		return metavalidation.NameIsDNSSubdomain
	}
}

func (c *Checker) checkCustom(obj *unstructured.Unstructured, kind *customKind) error {
	u := obj.DeepCopy().Object
	// What the API server's decoder does: report unknown fields (fieldValidation=Strict), metadata's included.
	_, _, unknownMeta, err := schemaobjectmeta.GetObjectMetaWithOptions(u, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	unknown := append(unknownMeta, pruning.PruneWithOptions(u, kind.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("unknown fields for %s (CRD %s): %s", obj.GroupVersionKind(), kind.crd, strings.Join(unknown, ", "))
	}
	structuraldefaulting.Default(u, kind.structural)

	// What the custom resource strategy validates.
	errs := metavalidation.ValidateObjectMetaAccessor(obj, kind.namespaced, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u, kind.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u, kind.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, kind.structural, u)...)
	if len(errs) == 0 {
		celErrs, _ := kind.cel.Validate(context.Background(), nil, kind.structural, u, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs.ToAggregate()
}

// checkCRD validates a CustomResourceDefinition as the API server does on create.
func checkCRD(obj *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, crd, true); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: decoding strictly: %w", obj.GetName(), err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
	}
	// What the CRD strategy's PrepareForCreate does: status is the server's, and it records the storage version.
	internal.Status = apiextensionsinternal.CustomResourceDefinitionStatus{}
	for _, v := range internal.Spec.Versions {
		if v.Storage {
			internal.Status.StoredVersions = []string{v.Name}
			break
		}
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, errs.ToAggregate())
	}
	if crd.Spec.PreserveUnknownFields {
		return nil, fmt.Errorf("CustomResourceDefinition %s preserves unknown fields: nothing could be checked against it", crd.Name)
	}
	for i, version := range crd.Spec.Versions {
		// Create validation requires a structural schema already; checked again here, since finding unknown fields
		// by pruning rests on it.
		_, structural, err := versionSchema(crd, version)
		if err != nil {
			return nil, err
		}
		if errs := structuralschema.ValidateStructural(field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema"), structural); len(errs) > 0 {
			return nil, fmt.Errorf("CustomResourceDefinition %s is not structural: %w", crd.Name, errs.ToAggregate())
		}
	}
	return crd, nil
}

// versionSchema is the schema of one version of a CRD, in the API server's internal form and as a structural schema,
// derived as the API server's custom resource handler derives them.
func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, version apiextensionsv1.CustomResourceDefinitionVersion) (*apiextensionsinternal.JSONSchemaProps, *structuralschema.Structural, error) {
	if version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
		return nil, nil, fmt.Errorf("CustomResourceDefinition %s version %s has no schema", crd.Name, version.Name)
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil); err != nil {
		return nil, nil, fmt.Errorf("CustomResourceDefinition %s version %s: %w", crd.Name, version.Name, err)
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, nil, fmt.Errorf("CustomResourceDefinition %s version %s: %w", crd.Name, version.Name, err)
	}
	return internal.OpenAPIV3Schema, structural, nil
}
