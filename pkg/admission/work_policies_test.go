package admission

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
)

// workRenderedWith is a Work as Karmada's binding controller writes it when override policies applied.
func workRenderedWith(overrides, clusterOverrides string) *workv1alpha1.Work {
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-es-member1", Name: "web-1", Annotations: map[string]string{}}}
	if overrides != "" {
		w.Annotations["policy.karmada.io/applied-overrides"] = overrides
	}
	if clusterOverrides != "" {
		w.Annotations["policy.karmada.io/applied-cluster-overrides"] = clusterOverrides
	}
	return w
}

func TestAppliedPolicies(t *testing.T) {
	for name, tc := range map[string]struct {
		work *workv1alpha1.Work
		want []appliedPolicy
		says string
	}{
		"both kinds, as Karmada records them": {
			work: workRenderedWith(`[{"policyName":"bigger-on-member1","overriders":{"plaintext":[{"path":"/spec","operator":"replace","value":1}]}}]`,
				`[{"policyName":"everywhere","overriders":{}}]`),
			want: []appliedPolicy{{kind: "OverridePolicy", name: "bigger-on-member1"}, {kind: "ClusterOverridePolicy", name: "everywhere"}},
			says: " (Karmada rendered it for karmada-es-member1 with OverridePolicy bigger-on-member1, ClusterOverridePolicy everywhere)",
		},
		"none": {work: workRenderedWith("", "")},
		// A hand-edited annotation is no reason to refuse differently.
		"unreadable": {work: workRenderedWith(`{not json`, ""), want: nil},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, appliedPolicies(tc.work), cmp.AllowUnexported(appliedPolicy{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got := renderedWith(tc.work); got != tc.says {
				t.Errorf("renderedWith = %q, want %q", got, tc.says)
			}
		})
	}
}

// objectRecorder records the objects events are about.
type objectRecorder struct {
	record.FakeRecorder
	about []string
}

func (r *objectRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	m := obj.(metav1.Object)
	r.about = append(r.about, obj.GetObjectKind().GroupVersionKind().Kind+"|"+typeName(obj)+"|"+m.GetNamespace()+"/"+m.GetName()+"|"+eventtype+"|"+reason+"|"+message)
}

func typeName(obj runtime.Object) string {
	switch obj.(type) {
	case *policyv1alpha1.OverridePolicy:
		return "OverridePolicy"
	case *policyv1alpha1.ClusterOverridePolicy:
		return "ClusterOverridePolicy"
	}
	return "?"
}

func TestReportOnPolicies(t *testing.T) {
	recorder := &objectRecorder{}
	v := &WorkValidator{recorder: recorder}
	work := workRenderedWith(`[{"policyName":"bigger-on-member1"}]`, `[{"policyName":"everywhere"}]`)
	v.reportOnPolicies(work, "shop", errors.New("Work karmada-es-member1/web-1 would have member cluster member1 run more"))
	want := []string{
		"|OverridePolicy|shop/bigger-on-member1|Warning|QuotaExceeded|Work karmada-es-member1/web-1 would have member cluster member1 run more",
		"|ClusterOverridePolicy|/everywhere|Warning|QuotaExceeded|Work karmada-es-member1/web-1 would have member cluster member1 run more",
	}
	if diff := cmp.Diff(want, recorder.about); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// Without a recorder, nothing is reported and nothing fails.
	(&WorkValidator{}).reportOnPolicies(work, "shop", errors.New("refused"))
}

func TestSameRequests(t *testing.T) {
	rr := func(cpu string) *workv1alpha2.ReplicaRequirements {
		return &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	binding := func(cpu string) *workv1alpha2.ResourceBinding {
		return &workv1alpha2.ResourceBinding{Spec: workv1alpha2.ResourceBindingSpec{ReplicaRequirements: rr(cpu)}}
	}
	multi := &workv1alpha2.ResourceBinding{Spec: workv1alpha2.ResourceBindingSpec{Components: []workv1alpha2.Component{
		{Name: "driver", ReplicaRequirements: &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
	}}}
	component := func(cpu string) []workv1alpha2.Component {
		return []workv1alpha2.Component{{Name: "driver", ReplicaRequirements: &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	}
	for name, tc := range map[string]struct {
		w    interpreter.Workload
		rb   *workv1alpha2.ResourceBinding
		want bool
	}{
		"the same requests, written otherwise":   {w: interpreter.Workload{Requirements: rr("2000m")}, rb: binding("2"), want: true},
		"the template asks more":                 {w: interpreter.Workload{Requirements: rr("3")}, rb: binding("2")},
		"the template asks less":                 {w: interpreter.Workload{Requirements: rr("1")}, rb: binding("2")},
		"the template asks another resource too": {w: interpreter.Workload{Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}, rb: binding("2")},
		"components alike":                       {w: interpreter.Workload{Components: component("1")}, rb: multi, want: true},
		"a component asks more":                  {w: interpreter.Workload{Components: component("2")}, rb: multi},
		"a component the template lost":          {w: interpreter.Workload{}, rb: multi},
	} {
		t.Run(name, func(t *testing.T) {
			if got := sameRequests(tc.w, tc.rb); got != tc.want {
				t.Errorf("sameRequests = %v, want %v", got, tc.want)
			}
		})
	}
}
