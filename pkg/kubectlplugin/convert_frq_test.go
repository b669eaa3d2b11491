package kubectlplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func frq(namespace, name string, overall corev1.ResourceList, assignments ...policyv1alpha1.StaticClusterAssignment) *policyv1alpha1.FederatedResourceQuota {
	return &policyv1alpha1.FederatedResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       policyv1alpha1.FederatedResourceQuotaSpec{Overall: overall, StaticAssignments: assignments},
	}
}

func assign(cluster string, hard corev1.ResourceList) policyv1alpha1.StaticClusterAssignment {
	return policyv1alpha1.StaticClusterAssignment{ClusterName: cluster, Hard: hard}
}

func kq(namespace, name string, spec quotav1alpha1.KarmadaQuotaSpec) *quotav1alpha1.KarmadaQuota {
	return &quotav1alpha1.KarmadaQuota{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

type convertRun struct {
	stdout, stderr string
	err            error
	client         client.Client
}

// runConvert runs `convert-frq args...` against a fake karmada-apiserver holding objs, with no kubeconfig.
func runConvert(t *testing.T, objs []client.Object, args ...string) convertRun {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	scheme := runtime.NewScheme()
	if err := quotav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := policyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&quotav1alpha1.KarmadaQuota{}).WithObjects(objs...).Build()

	var stdout, stderr bytes.Buffer
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: genericiooptions.IOStreams{Out: &stdout, ErrOut: &stderr}}
	root := &cobra.Command{Use: "kubectl-karmada-quota", SilenceUsage: true, SilenceErrors: true}
	o.config.AddFlags(root.PersistentFlags())
	root.AddCommand(newConvertFRQCommand(o, func() (client.Client, string, error) { return cl, "https://karmada.example:5443", nil }))
	root.SetArgs(append([]string{"convert-frq"}, args...))
	err := root.ExecuteContext(context.Background())
	return convertRun{stdout: stdout.String(), stderr: stderr.String(), err: err, client: cl}
}

func TestConvertFRQPrintsYAML(t *testing.T) {
	objs := []client.Object{
		frq("team-a", "gpu", list("cpu", "10", "memory", "20Gi", "count/deployments.apps", "5", "nvidia.com/gpu", "4"),
			assign("member2", list("cpu", "4", "nvidia.com/gpu", "4")),
			assign("member1", list("cpu", "6", "memory", "8Gi"))),
		frq("team-b", "other", list("cpu", "1")),
	}
	r := runConvert(t, objs, "-n", "team-a")
	if r.err != nil {
		t.Fatalf("err = %v; stderr:\n%s", r.err, r.stderr)
	}
	want := `# From FederatedResourceQuota team-a/gpu (policy.karmada.io/v1alpha1): spec.overall as spec.hard, spec.staticAssignments as spec.clusters.
apiVersion: quota.karmada.io/v1alpha1
kind: KarmadaQuota
metadata:
  name: gpu
  namespace: team-a
spec:
  clusters:
  - hard:
      cpu: "6"
      memory: 8Gi
    name: member1
  - hard:
      cpu: "4"
      nvidia.com/gpu: "4"
    name: member2
  hard:
    count/deployments.apps: "5"
    cpu: "10"
    memory: 20Gi
    nvidia.com/gpu: "4"
`
	if diff := cmp.Diff(want, r.stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing", r.stderr)
	}
}

func TestConvertFRQAllNamespacesSorted(t *testing.T) {
	objs := []client.Object{
		frq("team-b", "a", list("cpu", "1")),
		frq("team-a", "z", list("cpu", "2")),
		frq("team-a", "b", list("cpu", "3")),
		// By namespace first: "team-a/..." sorts after "team-a-x/..." as one string ('/' > '-').
		frq("team-a-x", "a", list("cpu", "4")),
	}
	r := runConvert(t, objs, "-A", "-o", "json")
	if r.err != nil {
		t.Fatalf("err = %v; stderr:\n%s", r.err, r.stderr)
	}
	var got struct {
		APIVersion, Kind string
		Items            []struct {
			Metadata struct{ Namespace, Name string }
			Spec     quotav1alpha1.KarmadaQuotaSpec
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is no JSON: %v\n%s", err, r.stdout)
	}
	if got.APIVersion != "v1" || got.Kind != "List" {
		t.Errorf("apiVersion/kind = %s/%s, want v1/List", got.APIVersion, got.Kind)
	}
	var order []string
	for _, it := range got.Items {
		order = append(order, it.Metadata.Namespace+"/"+it.Metadata.Name+" cpu="+it.Spec.Hard.Cpu().String())
	}
	if diff := cmp.Diff([]string{"team-a/b cpu=3", "team-a/z cpu=2", "team-a-x/a cpu=4", "team-b/a cpu=1"}, order); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}

	r = runConvert(t, objs, "-A")
	var headers []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "# From ") {
			headers = append(headers, strings.Fields(line)[3])
		}
	}
	if diff := cmp.Diff([]string{"team-a/b", "team-a/z", "team-a-x/a", "team-b/a"}, headers); diff != "" {
		t.Errorf("YAML documents (-want +got):\n%s", diff)
	}
	if n := strings.Count(r.stdout, "\n---\n"); n != 3 {
		t.Errorf("%d document separators, want 3:\n%s", n, r.stdout)
	}
}

// refusedFRQs are one convertible FederatedResourceQuota and one karmada-quota refuses: a limit, an object count
// in a cluster's limit, two keys for one resource, and a cluster left with nothing once its object count goes.
func refusedFRQs() []client.Object {
	return []client.Object{
		frq("team-a", "good", list("cpu", "4")),
		frq("team-a", "mixed", list("cpu", "10", "requests.cpu", "8", "limits.cpu", "20", "count/deployments.apps", "5"),
			assign("member1", list("cpu", "6", "count/deployments.apps", "2")),
			assign("member2", list("count/deployments.apps", "3"))),
	}
}

func TestConvertFRQRefusesWhatKarmadaQuotaRefuses(t *testing.T) {
	r := runConvert(t, refusedFRQs(), "-n", "team-a")
	if r.err == nil {
		t.Fatal("err = nil, want a failure: one FederatedResourceQuota was not converted")
	}
	if want := "1 of 2 FederatedResourceQuotas were not converted"; !strings.Contains(r.err.Error(), want) {
		t.Errorf("err = %q, want it to say %q", r.err, want)
	}
	if !strings.Contains(r.err.Error(), "--skip-invalid-resources") {
		t.Errorf("err = %q, want it to name --skip-invalid-resources", r.err)
	}
	// Each error against the FederatedResourceQuota's own field.
	for _, want := range []string{
		"error: FederatedResourceQuota team-a/mixed cannot be converted",
		"  spec.overall[limits.cpu]: Invalid value: \"limits.cpu\": limits cannot be enforced",
		"  spec.overall[requests.cpu]: Duplicate value: \"requests.cpu\"",
		"  spec.staticAssignments[0].hard[count/deployments.apps]: Invalid value: \"count/deployments.apps\": object counts are federation-wide",
		"  spec.staticAssignments[1].hard[count/deployments.apps]: Invalid value",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "spec.hard[") || strings.Contains(r.stderr, "spec.clusters[") {
		t.Errorf("stderr points at KarmadaQuota fields, want the FederatedResourceQuota's:\n%s", r.stderr)
	}
	// The convertible one is converted all the same, and nothing of the refused one is printed.
	if !strings.Contains(r.stdout, "name: good") || strings.Contains(r.stdout, "mixed") {
		t.Errorf("stdout, want team-a/good only:\n%s", r.stdout)
	}
}

func TestConvertFRQSkipInvalidResources(t *testing.T) {
	r := runConvert(t, refusedFRQs(), "-n", "team-a", "--skip-invalid-resources")
	if r.err != nil {
		t.Fatalf("err = %v; stderr:\n%s", r.err, r.stderr)
	}
	for _, want := range []string{
		"Warning: FederatedResourceQuota team-a/mixed: dropped spec.overall[limits.cpu]: limits cannot be enforced",
		// Both were enforced by Karmada: the smaller limit is the one that held.
		"Warning: FederatedResourceQuota team-a/mixed: dropped spec.overall[cpu]: the same resource as requests.cpu, whose smaller limit 8 is kept",
		"Warning: FederatedResourceQuota team-a/mixed: dropped spec.staticAssignments[0].hard[count/deployments.apps]: object counts are federation-wide",
		"Warning: FederatedResourceQuota team-a/mixed: dropped spec.staticAssignments[1].hard[count/deployments.apps]: object counts are federation-wide",
		"Warning: FederatedResourceQuota team-a/mixed: dropped spec.staticAssignments[1] (cluster member2): it limits nothing",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "error") {
		t.Errorf("stderr reports an error:\n%s", r.stderr)
	}
	want := `# From FederatedResourceQuota team-a/mixed (policy.karmada.io/v1alpha1): spec.overall as spec.hard, spec.staticAssignments as spec.clusters.
# Dropped (--skip-invalid-resources): spec.overall[limits.cpu]: limits cannot be enforced: a ResourceBinding carries resource requests only; use requests.cpu or the bare name
# Dropped (--skip-invalid-resources): spec.overall[cpu]: the same resource as requests.cpu, whose smaller limit 8 is kept
# Dropped (--skip-invalid-resources): spec.staticAssignments[0].hard[count/deployments.apps]: object counts are federation-wide (a bound object is counted once, wherever it is placed): limit them in spec.hard
# Dropped (--skip-invalid-resources): spec.staticAssignments[1].hard[count/deployments.apps]: object counts are federation-wide (a bound object is counted once, wherever it is placed): limit them in spec.hard
# Dropped (--skip-invalid-resources): spec.staticAssignments[1] (cluster member2): it limits nothing
apiVersion: quota.karmada.io/v1alpha1
kind: KarmadaQuota
metadata:
  name: mixed
  namespace: team-a
spec:
  clusters:
  - hard:
      cpu: "6"
    name: member1
  hard:
    count/deployments.apps: "5"
    requests.cpu: "8"
`
	_, mixed, _ := strings.Cut(r.stdout, "---\n")
	if diff := cmp.Diff(want, mixed); diff != "" {
		t.Errorf("team-a/mixed (-want +got):\n%s", diff)
	}
}

func TestConvertFRQSkipCannotFixEverything(t *testing.T) {
	// Karmada takes the first entry for a cluster named twice; which one was meant is for its author to say.
	objs := []client.Object{frq("team-a", "twice", list("cpu", "10"), assign("member1", list("cpu", "2")), assign("member1", list("cpu", "3")))}
	r := runConvert(t, objs, "-n", "team-a", "--skip-invalid-resources")
	if r.err == nil {
		t.Fatal("err = nil, want a failure")
	}
	if want := "spec.staticAssignments[1].clusterName: Duplicate value: \"member1\""; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing", r.stdout)
	}
}

func getQuota(t *testing.T, cl client.Client, namespace, name string) *quotav1alpha1.KarmadaQuota {
	t.Helper()
	var q quotav1alpha1.KarmadaQuota
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &q); err != nil {
		t.Fatalf("get KarmadaQuota %s/%s: %v", namespace, name, err)
	}
	return &q
}

func TestConvertFRQApply(t *testing.T) {
	objs := []client.Object{
		frq("team-a", "new", list("cpu", "10"), assign("member1", list("cpu", "4"))),
		frq("team-a", "same", list("cpu", "2")),
		frq("team-a", "differs", list("cpu", "3")),
		kq("team-a", "same", quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "2000m")}),
		kq("team-a", "differs", quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "30", "memory", "1Gi")}),
	}

	r := runConvert(t, objs, "-n", "team-a", "--apply")
	if r.err == nil || !strings.Contains(r.err.Error(), "1 of 3 FederatedResourceQuotas were not converted and applied") {
		t.Errorf("err = %v, want 1 of 3 not applied", r.err)
	}
	wantOut := "karmadaquota.quota.karmada.io/new created in namespace team-a\n" +
		"karmadaquota.quota.karmada.io/same unchanged in namespace team-a\n"
	if diff := cmp.Diff(wantOut, r.stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if want := "error: KarmadaQuota team-a/differs exists already and limits otherwise: left as is (--overwrite"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
	}
	created := getQuota(t, r.client, "team-a", "new")
	wantSpec := quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "10"), Clusters: []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", "4")}}}
	if !sameSpec(created.Spec, wantSpec) {
		t.Errorf("created spec = %+v, want %+v", created.Spec, wantSpec)
	}
	if q := getQuota(t, r.client, "team-a", "differs"); !sameSpec(q.Spec, quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "30", "memory", "1Gi")}) {
		t.Errorf("team-a/differs was changed without --overwrite: %+v", q.Spec)
	}

	r = runConvert(t, objs, "-n", "team-a", "--apply", "--overwrite")
	if r.err != nil {
		t.Fatalf("err = %v; stderr:\n%s", r.err, r.stderr)
	}
	wantOut = "karmadaquota.quota.karmada.io/differs configured in namespace team-a\n" +
		"karmadaquota.quota.karmada.io/new created in namespace team-a\n" +
		"karmadaquota.quota.karmada.io/same unchanged in namespace team-a\n"
	if diff := cmp.Diff(wantOut, r.stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	// The whole spec is replaced: memory, which the FederatedResourceQuota does not limit, is gone.
	if q := getQuota(t, r.client, "team-a", "differs"); !sameSpec(q.Spec, quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "3")}) {
		t.Errorf("team-a/differs after --overwrite: %+v, want hard cpu 3 only", q.Spec)
	}
}

func TestConvertFRQApplyDryRun(t *testing.T) {
	objs := []client.Object{
		frq("team-a", "new", list("cpu", "10")),
		frq("team-a", "differs", list("cpu", "3")),
		kq("team-a", "differs", quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "30")}),
	}
	for _, mode := range []string{"server", "client"} {
		t.Run(mode, func(t *testing.T) {
			r := runConvert(t, objs, "-n", "team-a", "--apply", "--overwrite", "--dry-run="+mode)
			if r.err != nil {
				t.Fatalf("err = %v; stderr:\n%s", r.err, r.stderr)
			}
			suffix := map[string]string{"server": " (server dry run)", "client": " (dry run)"}[mode]
			wantOut := "karmadaquota.quota.karmada.io/differs configured in namespace team-a" + suffix + "\n" +
				"karmadaquota.quota.karmada.io/new created in namespace team-a" + suffix + "\n"
			if diff := cmp.Diff(wantOut, r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			var quotas quotav1alpha1.KarmadaQuotaList
			if err := r.client.List(context.Background(), &quotas); err != nil {
				t.Fatal(err)
			}
			if len(quotas.Items) != 1 || !sameSpec(quotas.Items[0].Spec, quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "30")}) {
				t.Errorf("a dry run stored something: %+v", quotas.Items)
			}
		})
	}
}

func TestConvertFRQFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--dry-run=server":         "--dry-run goes with --apply",
		"--overwrite":              "--overwrite goes with --apply",
		"--apply -o yaml":          "--apply prints one line per KarmadaQuota",
		"--apply --dry-run=always": `--dry-run must be "none", "server" or "client"`,
		"-o wide":                  `unknown output format "wide"`,
	} {
		r := runConvert(t, []client.Object{frq("team-a", "q", list("cpu", "1"))}, strings.Fields(args)...)
		if r.err == nil || !strings.Contains(r.err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", args, r.err, want)
		}
		if r.stdout != "" {
			t.Errorf("%s: stdout = %q, want nothing", args, r.stdout)
		}
	}
}

func TestConvertFRQNoneFound(t *testing.T) {
	r := runConvert(t, []client.Object{frq("team-b", "q", list("cpu", "1"))}, "-n", "team-a")
	if r.err != nil || r.stdout != "" || r.stderr != "No FederatedResourceQuotas found in namespace team-a.\n" {
		t.Errorf("err = %v, stdout = %q, stderr = %q; want only the note on stderr", r.err, r.stdout, r.stderr)
	}
}
