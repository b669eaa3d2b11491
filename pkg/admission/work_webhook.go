package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	karmadautil "github.com/karmada-io/karmada/pkg/util"
	"github.com/karmada-io/karmada/pkg/util/names"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// WorkValidator guards the last gate: a Work is what a member cluster is actually sent, rendered by Karmada from
// the resource template for that member (OverridePolicies applied, replicas revised to the member's share), and
// what the member runs. On each member a binding is charged the larger, resource by resource, of what it places
// there and what its Work asks there (usage.Usage.Charge). So a Work asking no more than its binding places (the
// common case) is admitted without a write; one asking more (an override raising requests, a DaemonSet's pod per
// node, a CronJob's Jobs) is admitted like a binding write, against every quota of the namespace, with a
// reservation keyed by the Work's UID and generation, or refused. What the binding places is read from the
// apiserver, not a cache: a binding just admitted for more must not have its Work charged twice for a cache's lag.
type WorkValidator struct {
	admitter    *Admitter
	quotas      *QuotaReader
	bindings    client.Reader
	classes     *classifier
	holdings    *holdings
	interpreter *interpreter.Interpreter
	// nodes lists a member's nodes, for the workloads that run a pod per node.
	nodes interpreter.NodeLister
	// exempt are the kinds whose pods karmada-quota cannot know that the admin lets through uncharged.
	exempt sets.Set[schema.GroupKind]
	// recorder reports a refusal on the override policies Karmada rendered the Work with; nil reports none.
	recorder record.EventRecorder
	// templates reads a binding's resource template's metadata from the apiserver.
	templates client.Reader
}

var _ admission.Validator[*workv1alpha1.Work] = &WorkValidator{}

// ValidateCreate charges a new Work what it asks its member beyond its binding's placement there.
func (v *WorkValidator) ValidateCreate(ctx context.Context, work *workv1alpha1.Work) (admission.Warnings, error) {
	return nil, v.validate(ctx, admissionv1.Create, work, nil)
}

// ValidateUpdate charges a changed Work what it asks beyond that and beyond what it asked before.
func (v *WorkValidator) ValidateUpdate(ctx context.Context, old, work *workv1alpha1.Work) (admission.Warnings, error) {
	return nil, v.validate(ctx, admissionv1.Update, work, old)
}

// ValidateDelete admits every delete: a member running less never exceeds a quota.
func (v *WorkValidator) ValidateDelete(context.Context, *workv1alpha1.Work) (admission.Warnings, error) {
	return nil, nil
}

func (v *WorkValidator) validate(ctx context.Context, op admissionv1.Operation, work, old *workv1alpha1.Work) error {
	start := time.Now()
	err := v.decide(ctx, op, work, old)
	observe(metrics.KindWork, op, start, err)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Work write refused", "work", klog.KObj(work), "operation", op, "reason", apierrors.ReasonForError(err), "message", err.Error())
	}
	return err
}

// workloadsOf are the manifests of a Work that run replicas or hold something on the member (a claim, a load
// balancer), by namespace.
type workloadsOf map[string][]manifest

// manifest is one workload a Work carries: what it is, what it asks of its replicas, and what it holds on the
// member besides (Workload.Held: a claim grown by an override is charged as requests raised by one are).
type manifest struct {
	ref workv1alpha2.ObjectReference
	interpreter.Workload
	// opaque is set for an object of a kind whose pods karmada-quota cannot know (interpreter.Interpreter.Opaque),
	// and the admin did not exempt; it asks nothing the gate can count.
	opaque bool
}

func (v *WorkValidator) decide(ctx context.Context, op admissionv1.Operation, work, old *workv1alpha1.Work) error {
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
		if err := v.decideNamespace(ctx, op, cluster, work, namespace, workloads, before[namespace], old != nil); err != nil {
			return err
		}
	}
	return nil
}

// workloads reads the Work's manifests with Karmada's interpreter, the way its binding controller wrote them, and
// what each holds on the member. A manifest that runs no pods but holds something (a PersistentVolumeClaim, a
// LoadBalancer Service) is kept as a workload of no replicas.
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
		ref := workv1alpha2.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
		switch {
		case ok:
			out[obj.GetNamespace()] = append(out[obj.GetNamespace()], manifest{ref: ref, Workload: w})
		case obj.GetNamespace() != "" && v.interpreter.Opaque(obj.GroupVersionKind()) && !v.exempt.Has(obj.GroupVersionKind().GroupKind()):
			out[obj.GetNamespace()] = append(out[obj.GetNamespace()], manifest{ref: ref, opaque: true})
		}
	}
	return out, nil
}

func (v *WorkValidator) decideNamespace(ctx context.Context, op admissionv1.Operation, cluster string, work *workv1alpha1.Work, namespace string, workloads, before []manifest, update bool) error {
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
	var held usage.Held
	if v.holdings.knows(rb) && quotas.LimitHeld() {
		// The binding's placement holds what its template holds on this member: a Work asking as much is within it.
		if held, _, err = v.holdings.of(ctx, rb, nil); err != nil {
			return err
		}
	}
	placedUsage, err := usage.With(rb, held)
	if err != nil {
		return invalidBinding(rb, err)
	}
	asks, err := v.asks(ctx, rb, cluster, work, workloads)
	if err != nil {
		return err
	}
	var was []usage.Placed
	if update {
		// An old Work no quota could count (absurd quantities, say) is taken as asking nothing.
		was, _ = v.asks(ctx, rb, cluster, work, before)
	}
	ledgers, err := quotas.Ledgers(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("quotas of namespace %s cannot be enforced, so the write is refused (fail closed): %w", namespace, err))
	}
	if found := unboundedUnder(ledgers, workloads, asks); len(found) > 0 {
		return workRefused(work, cluster, rb, strings.Join(found, "; "))
	}
	if found := opaqueUnder(ledgers, workloads, before); len(found) > 0 {
		return workRefused(work, cluster, rb, strings.Join(found, "; "))
	}

	// The binding's placement on this member, with the Work it had (none for a create) and with this one: the
	// difference is what the write adds to the member's charge. On a member the binding is being evicted from, what
	// it keeps there is its placement until the eviction ends.
	placed := onCluster(append(placedUsage.Placed, placedUsage.Evicting...), cluster)
	newUsage := usage.Usage{Placed: placed, Works: map[string][]usage.Placed{cluster: asks}}
	oldUsage := usage.Usage{Placed: placed}
	if was != nil {
		oldUsage.Works = map[string][]usage.Placed{cluster: was}
	}
	owner := quotav1alpha1.ReservationOwner{
		APIVersion: workv1alpha1.SchemeGroupVersion.String(), Kind: quota.KindWork,
		Namespace: work.Namespace, Name: work.Name, UID: work.UID,
	}
	key := quota.Key{UID: work.UID, Generation: admittedWorkGeneration(op, work)}
	var growing []*quota.Ledger
	var demands []quota.Demand
	for _, l := range ledgers {
		if d := l.Demand(key, owner, newUsage, &oldUsage); len(d.Increase) > 0 || len(d.Missing) > 0 {
			growing, demands = append(growing, l), append(demands, d)
		}
	}
	if len(growing) == 0 {
		// No more than its binding places, or than it asked before: nothing to decide, nothing to write.
		return nil
	}
	// What the Work asks beyond what it may: the refusal when nothing may be reserved for it.
	beyond := func() string {
		found := make([]string, len(growing))
		for i, l := range growing {
			found[i] = quota.OverrunMessage(l.Name, l.Overruns(newUsage.Charge(l.Selector).Clusters[cluster], nil, oldUsage.Charge(l.Selector).Clusters[cluster]), l.AuthorNames(demands[i].Missing))
		}
		return strings.Join(found, "; ")
	}
	if rb.Name == "" {
		// No binding was admitted anything for this Work, and the controller charges Works only through their
		// binding: whatever it asks of a limited resource is refused, never reserved.
		return workRefused(work, cluster, rb, beyond())
	}
	if ahead, err := v.templateAhead(ctx, rb); err != nil {
		return err
	} else if ahead {
		// Karmada renders Works from the current template, whatever its binding was admitted for (Karmada's bug
		// #6937: a template change whose binding update the quota refused reaches the members once the binding
		// controller renders again). What a Work asks beyond its placement is charged only for the template its
		// binding was admitted for; until the binding catches up, the member keeps what it runs.
		return workRefused(work, cluster, rb, fmt.Sprintf("%s; and the binding has not been admitted for the requests of the current %s %s/%s "+
			"(its update is pending, or a quota refused it), so nothing beyond its placement is",
			beyond(), rb.Spec.Resource.Kind, rb.Spec.Resource.Namespace, rb.Spec.Resource.Name))
	}
	dryRun := false
	if req, err := admission.RequestFromContext(ctx); err == nil && req.DryRun != nil {
		dryRun = *req.DryRun
	}
	err = v.admitter.Admit(ctx, Request{Namespace: namespace, Queue: quotas.Queue(), Key: key, Owner: owner, New: newUsage, Old: &oldUsage, DryRun: dryRun})
	if apierrors.ReasonForError(err) == ReasonQuotaExceeded {
		refused := workRefused(work, cluster, rb, err.Error())
		if !dryRun {
			v.reportOnPolicies(work, namespace, refused)
		}
		return refused
	}
	return err
}

// templateAhead reports whether rb's resource template asks its replicas for other requests than rb was admitted
// for: Karmada's detector writes the template's per-replica requirements into the binding, so they differ only
// while the detector's update is pending, or after a quota refused it. The template is read from the apiserver; one
// that is gone is ahead of any binding, one that cannot be read refuses the write (fail closed), except one of a
// kind this webhook may not read (its RBAC grants the built-in workload kinds): the Work is then charged as any
// other, which keeps the quota exact and only lets a refused template reach a member within it. A binding that
// holds no requirements (a DaemonSet's, a CronJob's: Karmada reads none) has nothing to lag behind.
func (v *WorkValidator) templateAhead(ctx context.Context, rb *workv1alpha2.ResourceBinding) (bool, error) {
	if rb.Spec.ReplicaRequirements == nil && len(rb.Spec.Components) == 0 {
		return false, nil
	}
	ref := rb.Spec.Resource
	template := &unstructured.Unstructured{}
	template.SetAPIVersion(ref.APIVersion)
	template.SetKind(ref.Kind)
	if err := v.templates.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, template); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return false, apierrors.NewInternalError(fmt.Errorf("%s %s/%s could not be read, so the write is refused (fail closed): %w", ref.Kind, ref.Namespace, ref.Name, err))
	}
	w, ok, err := v.interpreter.Workload(ctx, template)
	if err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("%s %s/%s could not be read, so the write is refused (fail closed): %w", ref.Kind, ref.Namespace, ref.Name, err))
	}
	if !ok {
		return true, nil
	}
	return !sameRequests(w, rb), nil
}

// sameRequests reports whether w, a template read by the interpreter, asks each replica for what rb says: its
// per-replica requests, component by component for a multi-component binding.
func sameRequests(w interpreter.Workload, rb *workv1alpha2.ResourceBinding) bool {
	requestsOf := func(rr *workv1alpha2.ReplicaRequirements) corev1.ResourceList {
		if rr == nil {
			return nil
		}
		return rr.ResourceRequest
	}
	if len(rb.Spec.Components) == 0 {
		return quantitiesEqual(requestsOf(w.Requirements), requestsOf(rb.Spec.ReplicaRequirements))
	}
	asked := map[string]corev1.ResourceList{}
	for _, c := range w.Components {
		if c.ReplicaRequirements != nil {
			asked[c.Name] = c.ReplicaRequirements.ResourceRequest
		}
	}
	for _, c := range rb.Spec.Components {
		var admitted corev1.ResourceList
		if c.ReplicaRequirements != nil {
			admitted = c.ReplicaRequirements.ResourceRequest
		}
		if !quantitiesEqual(asked[c.Name], admitted) {
			return false
		}
	}
	return true
}

// quantitiesEqual compares two resource lists by value, in the accounting's units (2 and 2000m are the same CPU);
// a list the accounting cannot read is no match.
func quantitiesEqual(a, b corev1.ResourceList) bool {
	parsedA, errA := resources.Parse(a)
	parsedB, errB := resources.Parse(b)
	return errA == nil && errB == nil && parsedA.Equal(parsedB)
}

// reportOnPolicies records a Work's refusal on the override policies Karmada rendered it with: an OverridePolicy
// raised past the quota cannot be refused at its own write (what it costs depends on every workload it selects,
// placed on every member), so it is held at the Work, and its author reads why where they act. Karmada records the
// refusal on the binding and the resource template itself. The recorder aggregates Karmada's retries.
func (v *WorkValidator) reportOnPolicies(work *workv1alpha1.Work, namespace string, refused error) {
	if v.recorder == nil {
		return
	}
	for _, p := range appliedPolicies(work) {
		var obj runtime.Object
		if p.kind == policyv1alpha1.ResourceKindClusterOverridePolicy {
			obj = &policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: p.name}}
		} else {
			obj = &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: p.name}}
		}
		v.recorder.Event(obj, corev1.EventTypeWarning, string(ReasonQuotaExceeded), refused.Error())
	}
}

// asks is what workloads, a Work's manifests of one namespace, ask member cluster to run: each read as the member
// receives it (a per-node workload counted on the member's nodes), at rb's priority class where it names none.
func (v *WorkValidator) asks(ctx context.Context, rb *workv1alpha2.ResourceBinding, cluster string, work *workv1alpha1.Work, workloads []manifest) ([]usage.Placed, error) {
	var out []usage.Placed
	for _, w := range workloads {
		sets, err := w.OnMember(ctx, rb, cluster, v.nodes)
		if err != nil {
			if w.PerNode != nil {
				return nil, apierrors.NewInternalError(fmt.Errorf("%w, so the write is refused (fail closed)", err))
			}
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Work %s/%s asks member cluster %s for what no quota can count: %v", work.Namespace, work.Name, cluster, err))
		}
		out = append(out, sets...)
	}
	return out, nil
}

// unboundedUnder names, for each quota that limits what a Work's unbounded workload runs (a CronJob allowing
// concurrent Jobs), why it cannot be admitted: no bound, no admission, as no request, no admission.
func unboundedUnder(ledgers []*quota.Ledger, workloads []manifest, asks []usage.Placed) []string {
	var reasons []string
	for _, w := range workloads {
		if w.Unbounded != "" {
			reasons = append(reasons, w.Unbounded)
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	var found []string
	for _, l := range ledgers {
		if l.LimitsCompute(usage.Usage{Placed: asks}) {
			found = append(found, fmt.Sprintf("%s %s limits what it runs: %s", quota.Noun(l.Business()), l.Name, strings.Join(reasons, "; ")))
		}
	}
	return found
}

// opaqueUnder names, for each quota limiting what pods use, the workloads of a Work whose pods karmada-quota cannot
// know and that the Work did not carry before: the member would run them free of the quota. One carried before
// was stored under an earlier rule or exemption, and is left to change, as any quota leaves what it finds.
func opaqueUnder(ledgers []*quota.Ledger, workloads, before []manifest) []string {
	carried := map[workv1alpha2.ObjectReference]bool{}
	for _, m := range before {
		carried[m.ref] = true
	}
	var kinds []string
	for _, m := range workloads {
		if m.opaque && !carried[m.ref] {
			gvk := schema.FromAPIVersionAndKind(m.ref.APIVersion, m.ref.Kind)
			kinds = append(kinds, fmt.Sprintf("%s %s/%s (%s)", m.ref.Kind, m.ref.Namespace, m.ref.Name, gvk.GroupKind()))
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	var found []string
	for _, l := range ledgers {
		if l.LimitsPods() {
			found = append(found, fmt.Sprintf("quota %s limits what pods use, and karmada-quota cannot know the pods of %s: "+
				"Karmada's resource interpreter reads no replicas from the kind, no rule of karmada-quota reads its pods, and it "+
				"is not exempt. Describe its replicas with a ResourceInterpreterCustomization, or have the platform admin "+
				"exempt the kind (the webhook's --exempt-kinds, the chart's webhook.exemptKinds)",
				l.Name, strings.Join(kinds, ", ")))
		}
	}
	return found
}

// onCluster are the sets of placed on cluster.
func onCluster(placed []usage.Placed, cluster string) []usage.Placed {
	var out []usage.Placed
	for _, p := range placed {
		if p.Cluster == cluster {
			out = append(out, p)
		}
	}
	return out
}

// admittedWorkGeneration is the generation the admitted Work write produces: 1 on create, the new object's
// (bumped for a spec change before validating admission runs) on update, as for bindings.
func admittedWorkGeneration(op admissionv1.Operation, work *workv1alpha1.Work) int64 {
	if op == admissionv1.Create && work.Generation == 0 {
		return 1
	}
	return work.Generation
}

// binding is the ResourceBinding a Work was rendered from, as the apiserver has it now. A Work that names none in
// the namespace of its manifests, one that is gone, one bound to another object (a Work written by hand to borrow
// another workload's admission), or one rendered for an earlier binding of the same name (quota.RenderedFrom) was
// admitted nothing: it gets an unplaced binding of its (first) workload.
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
	if !quota.RenderedFrom(&rb, work.Labels[workv1alpha2.ResourceBindingPermanentIDLabel]) {
		// Rendered for an earlier binding of the same name: Karmada left it behind.
		return none, nil
	}
	if cluster, err := names.GetClusterName(work.Namespace); err != nil || !quota.Targets(&rb, cluster) {
		// For a cluster the binding left: nothing more is charged there.
		return none, nil
	}
	return &rb, nil
}

// workRefused is the refusal of a Work asking more than the quota allows: a 403 QuotaExceeded, as a binding's,
// that says what the member would have run and what to do. Karmada's binding controller records it as an event on
// the binding and the resource template, and retries.
func workRefused(work *workv1alpha1.Work, cluster string, rb *workv1alpha2.ResourceBinding, found string) error {
	owner := fmt.Sprintf("ResourceBinding %s/%s", rb.Namespace, rb.Name)
	if rb.Name == "" {
		owner = fmt.Sprintf("no ResourceBinding of namespace %s (the Work names none there, or it is gone)", rb.Namespace)
	}
	return forbidden(ReasonQuotaExceeded, fmt.Sprintf("Work %s/%s would have member cluster %s run more than quota allows for %s: %s. "+
		"The member keeps what it runs; to change it, raise the quota, or lower what the resource template, its "+
		"OverridePolicy or the Work asks%s",
		work.Namespace, work.Name, cluster, owner, found, renderedWith(work)))
}

// renderedWith names the override policies Karmada applied to the Work for its member, so that a refusal says
// which policy to look at.
func renderedWith(work *workv1alpha1.Work) string {
	var policies []string
	for _, p := range appliedPolicies(work) {
		policies = append(policies, p.kind+" "+p.name)
	}
	if len(policies) == 0 {
		return ""
	}
	return fmt.Sprintf(" (Karmada rendered it for %s with %s)", work.Namespace, strings.Join(policies, ", "))
}

type appliedPolicy struct{ kind, name string }

// appliedPolicies are the override policies Karmada applied to a Work, as it records them on the Work.
func appliedPolicies(work *workv1alpha1.Work) []appliedPolicy {
	var out []appliedPolicy
	for _, applied := range []struct{ annotation, kind string }{
		{karmadautil.AppliedOverrides, policyv1alpha1.ResourceKindOverridePolicy},
		{karmadautil.AppliedClusterOverrides, policyv1alpha1.ResourceKindClusterOverridePolicy},
	} {
		// Karmada's overridemanager.OverridePolicyShadow, of which only the name is read here: importing it would
		// link Karmada's override machinery (JSON patch and pointer libraries) into the webhook for one field.
		var items []struct {
			PolicyName string `json:"policyName"`
		}
		if err := json.Unmarshal([]byte(work.Annotations[applied.annotation]), &items); err != nil {
			continue
		}
		for _, item := range items {
			out = append(out, appliedPolicy{kind: applied.kind, name: item.PolicyName})
		}
	}
	return out
}
