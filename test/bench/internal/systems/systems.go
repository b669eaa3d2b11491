// Package systems sets up and tears down the three configurations a benchmark run compares on one control
// plane: no quota webhook, karmada-quota (its webhook and controller), and Karmada's own FederatedResourceQuota
// enforcement (karmada-webhook and karmada-controller-manager built from the pinned Karmada module). Each runs
// its components as separate OS processes, so every configuration pays the same process boundary.
package systems

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/controlplane"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/proc"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// Status is what a quota object says about itself, in karmada-quota's accounting units under canonical names
// (requests.cpu in milli-cores, requests.memory in bytes), so both quota APIs compare alike.
type Status struct {
	Hard resources.List
	Used resources.List
	// Pending is admitted but not yet observed usage: karmada-quota's reservations. Karmada's FRQ folds
	// admissions straight into overallUsed and has none.
	Pending resources.List
	// ClusterUsed is what the status says is used on each member cluster; nil when the quota API does not say
	// (Karmada's FRQ enforcement counts spec.overall only).
	ClusterUsed map[string]resources.List
	// MemberLimits are the quota's limits on member clusters: one cluster's, or a group's.
	MemberLimits []MemberLimit
}

// MemberLimit is a quota's limit on one member cluster or on a group of them, and what its status says is used
// there.
type MemberLimit struct {
	// Covers says whether a member cluster, by its name and its Cluster object's labels, counts against the limit.
	Covers     func(cluster string, labels labels.Set) bool
	Hard, Used resources.List
}

// ErrNoQuota is what Status says of a namespace without a quota of its own, where the configuration governs the
// namespace by a quota shared with others (SharedQuotas) instead.
var ErrNoQuota = errors.New("the namespace has no quota of its own")

// SharedQuotas is a configuration whose quotas may govern several namespaces together: karmada-quota's business
// quotas.
type SharedQuotas interface {
	// SharedStatuses reads every shared quota that governs one of namespaces at least.
	SharedStatuses(ctx context.Context, namespaces []string) ([]SharedStatus, error)
}

// SharedStatus is what a quota shared by several namespaces says about itself: its totals over them as Status, and
// what it says each uses.
type SharedStatus struct {
	// Name is the quota's.
	Name string
	Status
	// Namespaces are all the namespaces the quota governs now (its selector's choice, read from the apiserver),
	// sorted; not only those audited.
	Namespaces []string
	// NamespaceUsed is what the status says each namespace uses: the namespaces it lists.
	NamespaceUsed map[string]resources.List
}

// System is one configuration under test.
type System interface {
	// Name is the configuration's row label.
	Name() string
	// Enforcing says whether the configuration has quotas at all.
	Enforcing() bool
	// Start starts the components and registers the webhook.
	Start(ctx context.Context) error
	// CreateQuota creates the configuration's quota object in namespace ns, from the workload's limits.
	CreateQuota(ctx context.Context, ns string, limits workload.Limits) error
	// Status reads the quota of namespace ns.
	Status(ctx context.Context, ns string) (Status, error)
	// Processes are the components' processes by role, for CPU accounting and metrics.
	Processes() []*Component
	// ControllerWrote says whether the configuration's controller has written the status of namespace ns's
	// quota: proof that it runs against this apiserver.
	ControllerWrote(ctx context.Context, ns string) (bool, error)
	// Stop unregisters the webhook and stops the components.
	Stop(ctx context.Context) error
	// Describe says how the configuration was run, for the report.
	Describe() string
}

// Component is one running process of a configuration.
type Component struct {
	Role        string // webhook, controller
	Proc        *proc.Process
	MetricsAddr string
}

// Scrape returns the component's Prometheus metrics text.
func (c *Component) Scrape(ctx context.Context) (string, error) {
	return httpGet(ctx, "http://"+c.MetricsAddr+"/metrics")
}

// Env is what every configuration needs from the run.
type Env struct {
	CP     *controlplane.ControlPlane
	Reg    *proc.Registry
	LogDir string
}

// QuotaName is the name of every quota object the benchmark creates.
const QuotaName = "bench"

// running is what a quota configuration started, so that Stop undoes exactly that.
type running struct {
	components  []*Component
	certCleanup func()
	// registered is the webhook configuration the configuration registered, deleted on Stop.
	registered client.Object
}

// Processes implements System.
func (r *running) Processes() []*Component { return r.components }

// stop unregisters the webhook first, so no write meets a webhook that is going away, then stops the processes.
func (r *running) stop(ctx context.Context, c client.Client) error {
	var err error
	if r.registered != nil {
		err = client.IgnoreNotFound(c.Delete(ctx, r.registered))
	}
	for _, comp := range r.components {
		comp.Proc.Stop(10 * time.Second)
	}
	if r.certCleanup != nil {
		r.certCleanup()
	}
	return err
}

// freeAddrs returns n free 127.0.0.1:port addresses.
func freeAddrs(n int) ([]string, error) {
	ports, err := loopback.FreePorts(n)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	return addrs, nil
}

// servingCerts creates a serving certificate for 127.0.0.1 as envtest does for webhooks: a folder holding
// tls.crt and tls.key (the names both webhooks read by default), and the CA that signed it.
func servingCerts() (dir string, ca []byte, cleanup func(), err error) {
	opts := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := opts.PrepWithoutInstalling(); err != nil {
		return "", nil, nil, fmt.Errorf("creating serving certificates: %w", err)
	}
	return opts.LocalServingCertDir, opts.LocalServingCAData, func() { _ = opts.Cleanup() }, nil
}

// waitServing waits until addr completes a TLS handshake with a certificate ca trusts, and fails early if the
// process exits.
func waitServing(ctx context.Context, p *proc.Process, addr string, ca []byte) error {
	return waitFor(ctx, p, 60*time.Second, func() bool { return loopback.ServesTLS(addr, ca) })
}

// waitHealthy waits until url answers 200.
func waitHealthy(ctx context.Context, p *proc.Process, url string) error {
	return waitFor(ctx, p, 60*time.Second, func() bool {
		_, err := httpGet(ctx, url)
		return err == nil
	})
}

func waitFor(ctx context.Context, p *proc.Process, timeout time.Duration, ok func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("%s exited: %v (see its log)", p.Name, err)
		}
		return ok(), nil
	})
}

func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}

// statusOf converts a quota API's resource lists to accounting units under canonical names.
func statusOf(hard, used, pending corev1.ResourceList) (Status, error) {
	var s Status
	var errs [3]error
	s.Hard, errs[0] = resources.Parse(hard)
	s.Used, errs[1] = resources.Parse(used)
	s.Pending, errs[2] = resources.Parse(pending)
	return s, errors.Join(errs[:]...)
}
