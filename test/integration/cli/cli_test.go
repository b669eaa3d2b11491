package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with what the plugin prints now")

// run runs the plugin in-process as `kubectl karmada quota args...` against the test apiserver, with the user's
// kubeconfig, and renders what a person sees: the command, its exit code, stdout and stderr.
func run(args ...string) string {
	var stdout, stderr bytes.Buffer
	withConfig := append(append([]string(nil), args...), "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache"))
	code := kubectlplugin.Run(ctx, withConfig, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr})
	return fmt.Sprintf("$ kubectl karmada quota %s\n--- exit code %d\n--- stdout\n%s--- stderr\n%s",
		strings.Join(args, " "), code, stdout.String(), stderr.String())
}

// normalise replaces what changes from run to run, the addresses on loopback, with placeholders.
func normalise(out string, replacements ...string) string {
	return strings.NewReplacer(append(replacements, cfg.Host, "https://<apiserver>")...).Replace(out)
}

// expectGolden compares got with testdata/<name>.golden, or rewrites the file under -update.
func expectGolden(name, got string) {
	GinkgoHelper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		Expect(os.MkdirAll("testdata", 0o755)).To(Succeed())
		Expect(os.WriteFile(path, []byte(got), 0o644)).To(Succeed())
		return
	}
	want, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "no golden file: run `go test ./test/integration/cli -update` to write it")
	Expect(cmp.Diff(string(want), got)).To(BeEmpty(), "output differs from %s (-want +got); -update rewrites it", path)
}

var _ = Describe("kubectl karmada quota", func() {
	DescribeTable("prints what the golden file holds",
		func(golden string, args ...string) {
			expectGolden(golden, normalise(run(args...)))
		},
		Entry("describe: limits, use per cluster, waiting bindings short of quota", "describe-team-a",
			"describe", "team-a", "-n", "team-a"),
		Entry("describe without a name: every quota of the namespace, a scoped one with its meaning", "describe-namespace",
			"describe", "-n", "team-a"),
		Entry("describe a quota with a reservation outstanding, limiting services by their legacy name", "describe-team-b",
			"describe", "team-b", "-n", "team-b"),
		Entry("describe a quota whose spec the controller has not caught up with", "describe-behind",
			"describe", "team-c", "-n", "team-c"),
		Entry("describe reservations held by a binding and by a Work: what its member runs beyond the binding's placement", "describe-team-d",
			"describe", "team-d", "-n", "team-d"),
		Entry("describe -o json: a Work's reservation with its execution namespace and member cluster", "describe-team-d-json",
			"describe", "team-d", "-n", "team-d", "-o", "json"),
		Entry("describe -o json", "describe-gpu-json",
			"describe", "gpu", "-n", "team-a", "-o", "json"),
		Entry("describe -o yaml", "describe-team-a-yaml",
			"describe", "team-a", "-n", "team-a", "-o", "yaml"),

		Entry("list across namespaces: by namespace, quota and resource", "list-all",
			"list", "-A"),
		Entry("list one namespace", "list-team-b",
			"list", "-n", "team-b"),
		Entry("top across namespaces: fullest first", "top-all",
			"top", "--all-namespaces"),
		Entry("top -o json", "top-all-json",
			"top", "-A", "-o", "json"),
		Entry("list -o yaml", "list-team-a-yaml",
			"list", "-n", "team-a", "-o", "yaml"),
		Entry("list a namespace without quotas", "list-empty",
			"list", "-n", "default"),

		Entry("why: refused, short of cpu and memory, fits once usage drops", "why-batch",
			"why", "batch", "-n", "team-a"),
		Entry("why: refused, can never fit its GPUs", "why-train",
			"why", "deployment/train", "-n", "team-a"),
		Entry("why: scheduled, charged per cluster by one quota and not selected by the scoped one", "why-web",
			"why", "deploy/web", "-n", "team-a"),
		Entry("why: scheduled and charged by both quotas, -o json", "why-api-json",
			"why", "deployments.apps", "api", "-n", "team-a", "-o", "json"),
		Entry("why: -o yaml", "why-train-yaml",
			"why", "train", "-n", "team-a", "-o", "yaml"),
		Entry("why: the scheduler has not acted yet", "why-pending",
			"why", "pending", "-n", "team-a"),
		Entry("why: not scheduled for another reason", "why-nofit",
			"why", "nofit", "-n", "team-a"),
		Entry("why: no binding", "why-orphan",
			"why", "orphan", "-n", "team-a"),
		Entry("why: no such workload", "why-missing",
			"why", "missing", "-n", "team-a"),
		Entry("why: a DaemonSet scheduled, its Works refused on two members since its last sync", "why-agent",
			"why", "daemonset/agent", "-n", "team-d"),
		Entry("why: a CronJob's Work refused, no bound on its Jobs, -o json", "why-report-json",
			"why", "cronjob", "report", "-n", "team-d", "-o", "json"),
		Entry("why: a Work refused once, synced since: scheduled", "why-cache",
			"why", "cache", "-n", "team-d"),
		Entry("why: a user who may not read events still gets the answer, and is told what is unknown", "why-agent-no-events",
			"why", "ds/agent", "-n", "team-d", "--as", "team-d-viewer"),

		Entry("error: no such quota", "error-no-such-quota",
			"describe", "team-x", "-n", "team-a"),
		Entry("error: a user without rights, in a namespace", "error-forbidden",
			"describe", "team-a", "-n", "team-a", "--as", "nobody"),
		Entry("error: a user without rights, across namespaces", "error-forbidden-all",
			"top", "-A", "--as", "nobody"),
		Entry("a user who may read quotas but not bindings still gets the quota", "describe-quota-reader",
			"describe", "team-b", "-n", "team-b", "--as", "quota-reader"),
		Entry("error: an unknown output format", "error-output",
			"list", "-A", "-o", "wide"),
	)

	It("says which server it cannot reach, and why", func() {
		// A port nobody listens on: taken from the kernel's free ports and left closed.
		ports, err := loopback.FreePorts(1)
		Expect(err).NotTo(HaveOccurred())
		server := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		for _, args := range [][]string{
			{"describe", "team-a", "-n", "team-a"},
			{"top", "-A"},
			{"why", "web", "-n", "team-a"},
		} {
			got := run(append(args, "--server", server)...)
			expectGolden("error-unreachable-"+args[0], normalise(got, server, "https://127.0.0.1:<closed-port>",
				fmt.Sprintf("127.0.0.1:%d", ports[0]), "127.0.0.1:<closed-port>"))
		}
	})
})
