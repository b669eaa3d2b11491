package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// The webhooks' fuzz targets feed the handlers what the karmada-apiserver could send: an AdmissionRequest whose
// object and old object are raw JSON, malformed or extreme. Whatever arrives gets a clear answer (allowed, or a
// status with a code and a message) and nothing panics: the handlers are built with panic recovery off, and the
// admission batches run on goroutines of their own, where a panic would end the process. `make fuzz` runs them;
// their seed corpus runs in `make test`.

// answerCodes are the codes a refusal may carry: malformed (400), refused (403), invalid (422), fail closed (500),
// and the timeout of a decision (504).
var answerCodes = map[int32]bool{http.StatusBadRequest: true, http.StatusForbidden: true, http.StatusUnprocessableEntity: true,
	http.StatusInternalServerError: true, http.StatusGatewayTimeout: true}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// bindingJSON renders a binding as the apiserver sends it.
func bindingJSON(b *utiltesting.BindingWrapper) []byte {
	rb := b.Obj()
	rb.APIVersion, rb.Kind = workv1alpha2.SchemeGroupVersion.String(), "ResourceBinding"
	return mustJSON(rb)
}

// bindingSeeds are (operation, object, old object) seeds: real writes, extreme ones, malformed ones.
func bindingSeeds() [][3][]byte {
	web := utiltesting.MakeBinding(ns, "web").Replicas(2).Requests(list("cpu", "500m", "memory", "1Gi"))
	web.Spec.Resource.ResourceVersion = "1"
	classed := web.Clone().PriorityClass("high")
	huge := utiltesting.MakeBinding(ns, "huge").Replicas(2147483647).Requests(list("cpu", "1e15", "memory", "8Ei", "nvidia.com/gpu", "1e18"))
	manyClusters := web.Clone()
	for i := range 5000 {
		manyClusters.Cluster(fmt.Sprintf("member%d", i), 2147483647)
	}
	manyComponents := utiltesting.MakeBinding(ns, "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment")
	for i := range 2000 {
		manyComponents.Component(fmt.Sprintf("c%d", i), 2147483647, list("cpu", "1e15"))
	}
	both := manyComponents.Clone()
	for i := range 5000 {
		both.Cluster(fmt.Sprintf("member%d", i), 0)
	}
	manyComponents.Cluster("member1", 0)
	op := func(o admissionv1.Operation) []byte { return []byte(o) }
	return [][3][]byte{
		{op(admissionv1.Create), bindingJSON(web), nil},
		{op(admissionv1.Update), bindingJSON(web.Clone().Cluster("member1", 2).Generation(2)), bindingJSON(web)},
		{op(admissionv1.Update), bindingJSON(web.Clone().Cluster("member1", 30).Generation(2)), bindingJSON(web)},
		{op(admissionv1.Update), bindingJSON(classed.Clone().Cluster("member1", 2).Generation(2)), bindingJSON(classed)},
		{op(admissionv1.Update), bindingJSON(web.Clone().Cluster("member1", 1).Generation(3)), bindingJSON(web.Clone().Cluster("member1", 2))},
		{op(admissionv1.Update), bindingJSON(huge.Clone().Cluster("member1", 2147483647).Cluster("member2", 2147483647)), bindingJSON(huge)},
		{op(admissionv1.Update), bindingJSON(manyClusters), bindingJSON(web)},
		{op(admissionv1.Update), bindingJSON(manyComponents), bindingJSON(web)},
		{op(admissionv1.Update), bindingJSON(both), nil},
		{op(admissionv1.Update), bindingJSON(web.Clone().Cluster("member1", -5)), bindingJSON(web)},
		{op(admissionv1.Update), bindingJSON(web.Clone().Requests(list("cpu", "-1")).Cluster("member1", 1)), bindingJSON(web)},
		{op(admissionv1.Update), bindingJSON(web.Clone().Cluster("member1", 1)), []byte(`{"spec":{"clusters":[{"name":"m","replicas":-1}]}}`)},
		{op(admissionv1.Delete), nil, bindingJSON(web)},
		// Missing fields, wrong types, not JSON.
		{op(admissionv1.Create), []byte(`{}`), nil},
		{op(admissionv1.Create), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding"}`), nil},
		{op(admissionv1.Create), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"namespace":"team-a","name":"x"},"spec":null}`), nil},
		{op(admissionv1.Create), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"namespace":"team-a","name":"x"},"spec":{"replicas":"two"}}`), nil},
		{op(admissionv1.Update), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"namespace":"team-a","name":"x"},"spec":{"resource":{"apiVersion":"apps/v1","kind":"Deployment","name":"x"},"clusters":{"member1":3}}}`), bindingJSON(web)},
		{op(admissionv1.Update), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"namespace":"team-a","name":"x"},"spec":{"resource":{"apiVersion":"apps/v1","kind":"Deployment","name":"x"},"replicaRequirements":{"resourceRequest":{"cpu":"1e400"}},"clusters":[{"name":"m","replicas":1}]}}`), bindingJSON(web)},
		{op(admissionv1.Update), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"namespace":"team-a","name":"x"},"spec":{"resource":{"apiVersion":"apps/v1","kind":"Deployment","name":"x"},"replicaRequirements":{"resourceRequest":{"cpu":5}},"clusters":[{"name":"m","replicas":1e12}]}}`), bindingJSON(web)},
		{op(admissionv1.Create), []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`), nil},
		// Exponents at the int32 limits: decoding would never end, or the arithmetic would divide by zero.
		{op(admissionv1.Update), bindingJSON(web.Clone().Requests(list("cpu", "1e2147483647")).Cluster("member1", 1)), bindingJSON(web)},
		{op(admissionv1.Update), bindingJSON(web.Clone().Requests(list("cpu", "1e1000")).Cluster("member1", 1)), bindingJSON(web)},
		{op(admissionv1.Update), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"namespace":"team-a","name":"x"},"spec":{"resource":{"apiVersion":"apps/v1","kind":"Deployment","name":"x"},"replicaRequirements":{"resourceRequest":{"cpu":"1e-2147483647"}},"clusters":[{"name":"m","replicas":1}]}}`), bindingJSON(web)},
		{op(admissionv1.Update), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"namespace":"team-a","name":"x"},"spec":{"resource":{"apiVersion":"flink.apache.org/v1beta1","kind":"F","name":"x"},"components":[{"name":"c","replicas":1,"replicaRequirements":{"resourceRequest":{"memory":"5E-99999999"}}}],"clusters":[{"name":"m"}]}}`), bindingJSON(web)},
		{op(admissionv1.Create), []byte(`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"namespace":"team-a","name":"1e1000000"},"spec":{"resource":{"apiVersion":"apps/v1","kind":"Deployment","name":"1e1000000"}}}`), nil},
		{op(admissionv1.Create), []byte(`{`), nil},
		{op(admissionv1.Create), []byte(`null`), nil},
		{op(admissionv1.Create), []byte(`[]`), nil},
		{op(admissionv1.Create), nil, nil},
		{op(admissionv1.Update), bindingJSON(web), []byte(`"old"`)},
		{[]byte("PATCH"), bindingJSON(web), bindingJSON(web)},
	}
}

// fuzzBindingHandler is the binding webhook as Setup wires it, over a fake karmada-apiserver holding an unscoped
// quota, a scoped one, and a Deployment template naming a class.
func fuzzBindingHandler() *admission.Webhook {
	template := classTemplate("web", "high")
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithStatusSubresource(&quotav1alpha1.KarmadaQuota{}).WithObjects(
		utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "100", "memory", "100Gi", "pods", "1000", "count/deployments.apps", "1000")).Obj(),
		utiltesting.MakeQuota(ns, "high").Hard(list("cpu", "10", "nvidia.com/gpu", "4")).Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
		template,
	).Build()
	v := &BindingValidator{admitter: newAdmitter(c), quotas: NewQuotaReader(c, nil), classes: &classifier{resolver: priorityclass.NewResolver(c, 1000)}}
	return bindingWebhook(scheme.Scheme, v).WithRecoverPanic(false)
}

// checkAnswer fails unless resp is a clear answer: allowed, or refused with a known code and a message.
func checkAnswer(t *testing.T, resp admission.Response) {
	t.Helper()
	if resp.Allowed {
		return
	}
	if resp.Result == nil {
		t.Fatal("refused without a status")
	}
	if !answerCodes[resp.Result.Code] {
		t.Fatalf("refused with code %d (%s): %s", resp.Result.Code, resp.Result.Reason, resp.Result.Message)
	}
	if strings.TrimSpace(resp.Result.Message) == "" {
		t.Fatalf("refused with code %d and no message", resp.Result.Code)
	}
	if strings.Contains(resp.Result.Message, "panic") {
		t.Fatalf("a panic reached the answer: %s", resp.Result.Message)
	}
}

func admissionRequest(kind string, op admissionv1.Operation, object, old []byte, dryRun bool) admission.Request {
	gvk := metav1.GroupVersionKind{Group: workv1alpha2.SchemeGroupVersion.Group, Version: "v1alpha2", Kind: "ResourceBinding"}
	gvr := metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: "resourcebindings"}
	if kind == "KarmadaQuota" {
		gvk = metav1.GroupVersionKind{Group: quotav1alpha1.GroupVersion.Group, Version: quotav1alpha1.GroupVersion.Version, Kind: kind}
		gvr = metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: "karmadaquotas"}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "fuzz", Kind: gvk, Resource: gvr, Namespace: ns, Name: "fuzzed", Operation: op,
		Object: runtime.RawExtension{Raw: object}, OldObject: runtime.RawExtension{Raw: old}, DryRun: ptr.To(dryRun),
	}}
}

// FuzzBindingWebhook decodes and decides fuzzed ResourceBinding writes.
func FuzzBindingWebhook(f *testing.F) {
	for _, s := range bindingSeeds() {
		f.Add(s[0], s[1], s[2], false)
	}
	f.Add([]byte("UPDATE"), bindingSeeds()[2][1], bindingSeeds()[2][2], true)
	handler := fuzzBindingHandler()
	f.Fuzz(func(t *testing.T, operation, object, old []byte, dryRun bool) {
		resp := handler.Handle(context.Background(), admissionRequest("ResourceBinding", admissionv1.Operation(operation), object, old, dryRun))
		checkAnswer(t, resp)
	})
}

func quotaJSON(q *quotav1alpha1.KarmadaQuota) []byte {
	q.APIVersion, q.Kind = quotav1alpha1.GroupVersion.String(), "KarmadaQuota"
	return mustJSON(q)
}

// FuzzQuotaWebhook decodes and validates fuzzed KarmadaQuota writes.
func FuzzQuotaWebhook(f *testing.F) {
	valid := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10", "memory", "20Gi", "count/deployments.apps", "5"))
	for _, s := range [][3][]byte{
		{[]byte("CREATE"), quotaJSON(valid.Obj()), nil},
		{[]byte("UPDATE"), quotaJSON(valid.Clone().Hard(list("cpu", "1e18", "memory", "8Ei", "pods", "9223372036854775807")).Obj()), quotaJSON(valid.Obj())},
		{[]byte("CREATE"), quotaJSON(valid.Clone().Hard(list("cpu", "-1")).Obj()), nil},
		{[]byte("CREATE"), quotaJSON(valid.Clone().Scope(corev1.ScopeSelectorOpIn, "high").Obj()), nil},
		{[]byte("CREATE"), quotaJSON(valid.Clone().Hard(list("cpu", "1")).Scope(corev1.ScopeSelectorOpIn).Obj()), nil},
		{[]byte("CREATE"), quotaJSON(valid.Clone().Hard(list("limits.cpu", "1", "pods", "0.5")).Obj()), nil},
		{[]byte("CREATE"), []byte(`{"apiVersion":"quota.karmada.io/v1alpha1","kind":"KarmadaQuota","metadata":{"name":"q"},"spec":{"hard":{"cpu":"1e400"}}}`), nil},
		{[]byte("CREATE"), []byte(`{"apiVersion":"quota.karmada.io/v1alpha1","kind":"KarmadaQuota","metadata":{"name":"q"},"spec":{"hard":[1,2]}}`), nil},
		{[]byte("CREATE"), []byte(`{"apiVersion":"quota.karmada.io/v1alpha1","kind":"KarmadaQuota","metadata":{"name":"q"},"spec":{"scopeSelector":{"matchExpressions":[{"scopeName":"Terminating","operator":"Exists"}]}}}`), nil},
		{[]byte("CREATE"), []byte(`{"apiVersion":"quota.karmada.io/v1alpha1","kind":"KarmadaQuota","metadata":{"name":"q"},"spec":{"hard":{"cpu":"1e2147483647","pods":"1e2147483647"}}}`), nil},
		{[]byte("CREATE"), []byte(`{"apiVersion":"quota.karmada.io/v1alpha1","kind":"KarmadaQuota","metadata":{"name":"q"},"spec":{"hard":{"cpu":"1e-2147483647"}}}`), nil},
		{[]byte("UPDATE"), []byte(`{"apiVersion":"quota.karmada.io/v1alpha1","kind":"KarmadaQuota","metadata":{"name":"q"},"spec":{"hard":{"cpu":"1"}},"status":{"reservations":[{"reserved":{"cpu":"1e-99999"}}]}}`), quotaJSON(valid.Obj())},
		{[]byte("CREATE"), []byte(`{}`), nil},
		{[]byte("CREATE"), []byte(`nope`), nil},
		{[]byte("DELETE"), nil, quotaJSON(valid.Obj())},
	} {
		f.Add(s[0], s[1], s[2])
	}
	handler := quotaWebhook(scheme.Scheme, QuotaValidator{}).WithRecoverPanic(false)
	f.Fuzz(func(t *testing.T, operation, object, old []byte) {
		checkAnswer(t, handler.Handle(context.Background(), admissionRequest("KarmadaQuota", admissionv1.Operation(operation), object, old, false)))
	})
}
