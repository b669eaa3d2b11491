package admission

import (
	"context"
	"fmt"
	"net/http"
	"time"

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

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// TemplateValidator refuses, where the user acts, a change to a propagated resource template that would raise
// what its placed replicas use past a quota: new per-replica requests (containers, init containers, overhead, the
// components of a CRD, read by Karmada's resource interpreter) times the replicas the binding places now, and what
// the object holds on each member it is on (a claim grown, more claim templates, a Service turned LoadBalancer). The user
// sees the refusal at `kubectl apply`, as Kubernetes refuses a pod past a ResourceQuota, instead of as an event
// on a template whose new version never reaches the members.
//
// It reserves nothing: the binding Karmada's detector writes next is admitted (and reserved) by the binding
// webhook, and what the members receive is held by the Work webhook, so a race between two template writes can
// delay a refusal to those gates but never lets a member run more than admitted. A change of replicas is left to
// the scheduler, which places what fits and reports the rest as the binding's Scheduled=False, QuotaExceeded.
type TemplateValidator struct {
	admitter    *Admitter
	quotas      *QuotaReader
	bindings    client.Reader
	classes     *classifier
	holdings    *holdings
	interpreter *interpreter.Interpreter
	decoder     admission.Decoder
}

var _ admission.Handler = &TemplateValidator{}

// Handle decides one resource template update.
func (v *TemplateValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	start := time.Now()
	obj := &unstructured.Unstructured{}
	if err := v.decoder.DecodeRaw(req.Object, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var was *unstructured.Unstructured
	if len(req.OldObject.Raw) > 0 {
		was = &unstructured.Unstructured{}
		if err := v.decoder.DecodeRaw(req.OldObject, was); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	err := v.decide(ctx, obj, was)
	observe(metrics.KindResourceTemplate, req.Operation, start, err)
	if err == nil {
		return admission.Allowed("")
	}
	klog.FromContext(ctx).V(2).Info("Resource template write refused", "kind", obj.GetKind(), "template", klog.KObj(obj), "reason", apierrors.ReasonForError(err), "message", err.Error())
	if status, ok := err.(apierrors.APIStatus); ok {
		s := status.Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &s}}
	}
	return admission.Errored(http.StatusInternalServerError, err)
}

// decide decides the update of the template was (nil when the request carries none) into obj.
func (v *TemplateValidator) decide(ctx context.Context, obj, was *unstructured.Unstructured) error {
	// One read of the namespace's quotas serves the question whether any governs it and the binding's class; the
	// decision is the Admitter's, on its own read.
	quotas, err := v.quotas.Read(ctx, obj.GetNamespace())
	if err != nil || !quotas.Governed() {
		// Not the gate that must fail closed: the binding and Work webhooks do.
		return nil
	}
	w, ok, err := v.interpreter.Workload(ctx, obj)
	if err != nil || !ok {
		// Karmada's detector reads the template the same way; a template it cannot read gets no binding update,
		// and one that runs no replicas uses no compute.
		return nil
	}
	var rb workv1alpha2.ResourceBinding
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: names.GenerateBindingName(obj.GetKind(), obj.GetName())}
	if err := v.bindings.Get(ctx, key, &rb); err != nil || rb.Spec.Resource.UID != obj.GetUID() {
		// Not placed yet (or an older object's binding): the binding webhook decides its first placement.
		return nil
	}
	would := w.Bound(&rb, nil)
	would, current, err := v.classes.classify(ctx, quotas, would, &rb)
	if err != nil {
		// A class that cannot be told is refused as the binding webhook refuses it; a read that failed is not this
		// gate's to fail closed on.
		if apierrors.ReasonForError(err) == metav1.StatusReason(quotav1alpha1.ReasonPriorityClassUnknown) {
			return err
		}
		return nil
	}
	// What the template held, read from the stored version itself; remembered for the binding write the detector
	// makes next, whose old binding names that version (holdings.of).
	// A stored version that cannot be read held nothing this gate counts.
	var wasHeld usage.Held
	if was != nil {
		if h, err := interpreter.HeldBy(was); err == nil {
			wasHeld = h
			if v.holdings != nil && rb.Spec.Resource.ResourceVersion == was.GetResourceVersion() {
				v.holdings.reader.Remember(rb.Spec.Resource, wasHeld)
			}
		}
	}
	newUsage, err := usage.With(would, w.Held)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s %s/%s asks for what no quota can count: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err))
	}
	oldUsage, err := usage.With(current, wasHeld)
	if err != nil {
		return nil
	}
	if !usage.Grows(newUsage, &oldUsage) {
		return nil
	}
	err = v.admitter.Admit(ctx, Request{
		Namespace: rb.Namespace,
		Queue:     quotas.Queue(),
		// Generation 0, a key no binding write has: the decision counts every reservation the binding holds
		// (a template write racing ahead of its binding's is charged twice, never not at all).
		Key: quota.Key{UID: rb.UID, Generation: 0},
		Owner: quotav1alpha1.ReservationOwner{
			APIVersion: workv1alpha2.SchemeGroupVersion.String(), Kind: quota.KindResourceBinding, Name: rb.Name, UID: rb.UID,
		},
		New:    newUsage,
		Old:    &oldUsage,
		DryRun: true,
	})
	if apierrors.ReasonForError(err) != ReasonQuotaExceeded {
		return nil
	}
	return forbidden(ReasonQuotaExceeded, fmt.Sprintf("this change to %s %s/%s would have what ResourceBinding %s places use more than quota allows: %s",
		obj.GetKind(), obj.GetNamespace(), obj.GetName(), rb.Name, err.Error()))
}
