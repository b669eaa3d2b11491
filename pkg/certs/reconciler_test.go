package certs

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

// shortOptions are self-managed options with lifetimes short enough to step through.
func shortOptions() Options {
	o := NewOptions()
	o.Mode = ModeSelfManaged
	o.Validity, o.CAValidity, o.CheckInterval = time.Minute, 10*time.Minute, 5*time.Second
	return o
}

func webhookConfiguration(name string, webhooks ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, w := range webhooks {
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: w})
	}
	return c
}

func servingSecret(t *testing.T, c client.Client, o Options) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: o.Namespace, Name: o.ServingSecret}, &s); err != nil {
		t.Fatalf("reading the serving Secret: %v", err)
	}
	return &s
}

func servedSerial(t *testing.T, c client.Client, o Options) string {
	t.Helper()
	pair, err := parseKeyPair(servingSecret(t, c, o).Data)
	if err != nil {
		t.Fatalf("parsing the serving Secret: %v", err)
	}
	return pair.cert.SerialNumber.String()
}

// waitBlocked waits until the runnable sleeps on the fake clock, its pass done.
func waitBlocked(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return clk.HasWaiters(), nil }); err != nil {
		t.Fatal("the runnable never went to sleep")
	}
}

func TestFirstPassEvents(t *testing.T) {
	o := shortOptions()
	host := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	karmada := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(webhookConfiguration(o.WebhookConfiguration, "a.example.io", "b.example.io")).Build()
	recorder := record.NewFakeRecorder(10)
	r, err := NewReconciler(host, karmada, o, clocktesting.NewFakeClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	r.WithEventRecorder(recorder)
	if _, err := r.Reconcile(context.Background()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	close(recorder.Events)
	var reasons []string
	for e := range recorder.Events {
		reasons = append(reasons, strings.Fields(e)[1])
	}
	if diff := cmp.Diff([]string{EventCACreated, EventIssued, EventWebhookSynced}, reasons); diff != "" {
		t.Errorf("event reasons (-want +got):\n%s", diff)
	}
	// A second pass at the same time has nothing to do.
	if wait, err := r.Reconcile(context.Background()); err != nil || wait != o.CheckInterval {
		t.Errorf("second Reconcile = %s, %v; want the check interval %s", wait, err, o.CheckInterval)
	}
}

func TestRunnableRenewsWhenDue(t *testing.T) {
	o := shortOptions()
	clk := clocktesting.NewFakeClock(t0)
	host := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	karmada := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(webhookConfiguration(o.WebhookConfiguration, "a.example.io")).Build()
	r, err := NewReconciler(host, karmada, o, clk)
	if err != nil {
		t.Fatal(err)
	}
	if !r.NeedLeaderElection() {
		t.Error("the runnable must run on the leader only")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	}()

	waitBlocked(t, clk)
	first := servedSerial(t, host, o)
	leaf, _ := parseKeyPair(servingSecret(t, host, o).Data)
	renewal := renewalTime(leaf.cert)
	// Checks every interval change nothing until the renewal falls due; the runnable then wakes at that time
	// (before the next full interval) and issues.
	for clk.Now().Add(o.CheckInterval).Before(renewal) {
		clk.Step(o.CheckInterval)
		waitBlocked(t, clk)
		if got := servedSerial(t, host, o); got != first {
			t.Fatalf("renewed at %s, before the renewal time %s", clk.Now(), renewal)
		}
	}
	renewalsBefore := exported(t, "karmada_quota_webhook_certificate_renewals_total", metrics.ServingCertificate)
	clk.SetTime(renewal)
	waitBlocked(t, clk)
	if got := servedSerial(t, host, o); got == first {
		t.Fatalf("not renewed at the renewal time %s", renewal)
	}
	if got := exported(t, "karmada_quota_webhook_certificate_renewals_total", metrics.ServingCertificate) - renewalsBefore; got != 1 {
		t.Errorf("serving renewals counted: %v, want 1", got)
	}
	renewed, _ := parseKeyPair(servingSecret(t, host, o).Data)
	if got, want := exported(t, "karmada_quota_webhook_certificate_expiration_timestamp_seconds", metrics.ServingCertificate), float64(renewed.cert.NotAfter.Unix()); got != want {
		t.Errorf("serving expiration exported: %v, want %v", got, want)
	}
}

// exported is the value of a certificate series as controller-runtime's registry serves it on /metrics.
func exported(t *testing.T, name string, certificate metrics.Certificate) float64 {
	t.Helper()
	metrics.RegisterCertificates()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "certificate" && l.GetValue() == string(certificate) {
					return m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

func TestRunnableRetriesAFailedPass(t *testing.T) {
	o := shortOptions()
	clk := clocktesting.NewFakeClock(t0)
	var failures atomic.Int32
	failures.Store(3)
	host := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if failures.Add(-1) >= 0 {
				return errors.New("the host apiserver is unreachable")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	karmada := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	r, err := NewReconciler(host, karmada, o, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	}()
	// Backoff 1s, 2s, 4s, then the pass that succeeds.
	for _, backoff := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		waitBlocked(t, clk)
		clk.Step(backoff)
	}
	waitBlocked(t, clk)
	servedSerial(t, host, o)
}
