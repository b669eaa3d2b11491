package admission

import (
	"context"
	"fmt"
	"strings"
	"time"

	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// WorkValidator guards the last gate: a Work is what a member cluster is actually sent. Whatever led to it (a
// resource template changed past quota and Karmada's binding controller rendering it again after a restart, an
// OverridePolicy, a hand edit), a Work may not ask its member to run more, in any resource a quota of the
// namespace limits, than the quota admitted for its binding on that member: the binding's placed replicas there
// at the binding's per-replica requests. What the binding admits is read from the apiserver, not a cache: a
// binding just admitted for more must not have its Work refused for a cache's lag.
type WorkValidator struct {
	quotas      *QuotaReader
	bindings    client.Reader
	classes     *classifier
	interpreter *interpreter.Interpreter
}

var _ admission.Validator[*workv1alpha1.Work] = &WorkValidator{}

// ValidateCreate holds a new Work to what its binding was admitted for on the Work's member.
func (v *WorkValidator) ValidateCreate(ctx context.Context, work *workv1alpha1.Work) (admission.Warnings, error) {
	return nil, v.validate(ctx, admissionv1.Create, work, nil)
}

// ValidateUpdate holds a changed Work to the same, except for what it asked already.
func (v *WorkValidator) ValidateUpdate(ctx context.Context, old, work *workv1alpha1.Work) (admission.Warnings, error) {
	return nil, v.validate(ctx, admissionv1.Update, work, old)
}

// ValidateDelete admits every delete: a member running less never exceeds a quota.
func (v *WorkValidator) ValidateDelete(context.Context, *workv1alpha1.Work) (admission.Warnings, error) {
	return nil, nil
}

func (v *WorkValidator) validate(ctx context.Context, op admissionv1.Operation, work, old *workv1alpha1.Work) error {
	start := time.Now()
	err := v.decide(ctx, work, old)
	observe(metrics.KindWork, op, start, err)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Work write refused", "work", klog.KObj(work), "operation", op, "reason", apierrors.ReasonForError(err), "message", err.Error())
	}
	return err
}

// workloadsOf are the manifests of a Work that run replicas, by namespace.
type workloadsOf map[string][]manifest

// manifest is one workload a Work carries: what it is, and what it asks of its replicas.
type manifest struct {
	ref workv1alpha2.ObjectReference
	interpreter.Workload
}

func (v *WorkValidator) decide(ctx context.Context, work, old *workv1alpha1.Work) error {
	// Karmada sends members only the Works of their execution namespaces.
	cluster, err := names.GetClusterName(work.Namespace)
	if err != nil {
		return nil
	}
	asked, err := v.workloads(ctx, work)
	if err != nil {
		return err
	}
	var before workloadsOf
	if old != nil {
		// What a stored Work asks was accepted once; one no longer readable asked nothing this gate counts.
		before, _ = v.workloads(ctx, old)
	}
	for namespace, workloads := range asked {
		if err := v.decideNamespace(ctx, cluster, work, namespace, workloads, before, old != nil); err != nil {
			return err
		}
	}
	return nil
}

// workloads reads the Work's manifests with Karmada's interpreter, the way its binding controller wrote them.
func (v *WorkValidator) workloads(ctx context.Context, work *workv1alpha1.Work) (workloadsOf, error) {
	out := workloadsOf{}
	for i, m := range work.Spec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.workload.manifests[%d] is not a Kubernetes object: %v", i, err))
		}
		w, ok, err := v.interpreter.Workload(ctx, obj)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("spec.workload.manifests[%d] could not be read, so the write is refused (fail closed): %w", i, err))
		}
		if ok {
			ref := workv1alpha2.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
			out[obj.GetNamespace()] = append(out[obj.GetNamespace()], manifest{ref: ref, Workload: w})
		}
	}
	return out, nil
}

func (v *WorkValidator) decideNamespace(ctx context.Context, cluster string, work *workv1alpha1.Work, namespace string, workloads []manifest, before workloadsOf, update bool) error {
	// One read of the namespace's quotas serves the question whether any governs it, the binding's class and the
	// decision.
	quotas, err := v.quotas.Read(ctx, namespace)
	if err != nil {
		return quotasNotListed(namespace, err)
	}
	if !quotas.Governed() {
		return nil
	}
	rb, err := v.binding(ctx, work, workloads[0].ref)
	if err != nil {
		return err
	}
	rb, _, err = v.classes.classify(ctx, quotas, rb, nil)
	if err != nil {
		return err
	}
	admitted, err := usage.Of(rb)
	if err != nil {
		return invalidBinding(rb, err)
	}
	on := func(workloads []manifest) (usage.Usage, error) {
		var u usage.Usage
		for _, w := range workloads {
			one, err := usage.Of(asking(rb, w.Workload, []workv1alpha2.TargetCluster{{Name: cluster, Replicas: w.Replicas}}))
			if err != nil {
				return usage.Usage{}, apierrors.NewBadRequest(fmt.Sprintf("Work %s/%s asks member cluster %s for what no quota can count: %v", work.Namespace, work.Name, cluster, err))
			}
			u.Placed = append(u.Placed, one.Placed...)
		}
		return u, nil
	}
	asked, err := on(workloads)
	if err != nil {
		return err
	}
	var was *usage.Usage
	if update {
		// An old Work no quota could count (absurd quantities, say) is taken as asking nothing.
		if u, err := on(before[namespace]); err == nil {
			was = &u
		}
	}

	ledgers, err := quotas.Ledgers()
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("quotas of namespace %s cannot be enforced, so the write is refused (fail closed): %w", namespace, err))
	}
	var found []string
	for _, l := range ledgers {
		var wasOn resources.List
		if was != nil {
			wasOn = was.Charge(l.Selector).Clusters[cluster]
			if wasOn == nil {
				wasOn = resources.List{}
			}
		}
		overruns := l.Overruns(asked.Charge(l.Selector).Clusters[cluster], admitted.Charge(l.Selector).Clusters[cluster], wasOn)
		unrequested := l.UnrequestedOverrun(asked, admitted, was)
		if len(overruns) > 0 || len(unrequested) > 0 {
			found = append(found, quota.OverrunMessage(l.Name, overruns, unrequested))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return workOverrun(work, cluster, rb, found)
}

// binding is the ResourceBinding a Work was rendered from, as the apiserver has it now. A Work that names none in
// the namespace of its manifests, one that is gone, or one bound to another object (a Work written by hand to
// borrow another workload's admission) was admitted nothing: it gets an unplaced binding of its (first) workload.
func (v *WorkValidator) binding(ctx context.Context, work *workv1alpha1.Work, workload workv1alpha2.ObjectReference) (*workv1alpha2.ResourceBinding, error) {
	namespace := workload.Namespace
	none := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec:       workv1alpha2.ResourceBindingSpec{Resource: workload},
	}
	name := work.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey]
	if name == "" || work.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey] != namespace {
		return none, nil
	}
	var rb workv1alpha2.ResourceBinding
	if err := v.bindings.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &rb); err != nil {
		if apierrors.IsNotFound(err) {
			return none, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("binding %s/%s could not be read, so the write is refused (fail closed): %w", namespace, name, err))
	}
	if rb.Spec.Resource.Kind != workload.Kind || rb.Spec.Resource.Name != workload.Name {
		return none, nil
	}
	return &rb, nil
}

// workOverrun is the refusal of a Work asking more than was admitted: a 403 QuotaExceeded, as a binding's, that
// says what the member would have run, what was admitted, and what to do.
func workOverrun(work *workv1alpha1.Work, cluster string, rb *workv1alpha2.ResourceBinding, found []string) error {
	owner := fmt.Sprintf("ResourceBinding %s/%s", rb.Namespace, rb.Name)
	if rb.Name == "" {
		owner = fmt.Sprintf("no ResourceBinding of namespace %s (the Work names none there, or it is gone)", rb.Namespace)
	}
	return forbidden(ReasonQuotaExceeded, fmt.Sprintf("Work %s/%s would have member cluster %s run more than admitted for %s: %s. "+
		"The member keeps what it runs; to change it, raise the quota or undo the change to the resource template, "+
		"its OverridePolicy or the Work",
		work.Namespace, work.Name, cluster, owner, strings.Join(found, "; ")))
}
