package metrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Server serves the scrape on /metrics until its context ends, then stops listening and returns.
func TestServerServesUntilStopped(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := probe.Addr().String()
	_ = probe.Close()
	SetStoredQuotaSource(fakeStoredQuotas{{Namespace: "team-a", Name: "team", Generation: 1, ObservedGeneration: 1, Ready: true}})
	t.Cleanup(func() { SetStoredQuotaSource(nil) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Server{Address: address, Gatherer: prometheus.NewRegistry()}.Start(ctx) }()

	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + address + "/metrics")
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			body = string(raw)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing served on %s: %v", address, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(body, `karmada_quota_status_ready{namespace="team-a",quota="team"} 1`) {
		t.Errorf("the scrape lacks the stored quota's series:\n%s", body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v after its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
	if _, err := http.Get("http://" + address + "/metrics"); err == nil {
		t.Error("still serving after it stopped")
	}
}

func TestServerRefusesAnAddressInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	if err := (Server{Address: taken.Addr().String(), Gatherer: prometheus.NewRegistry()}).Start(context.Background()); err == nil {
		t.Error("started on an address in use")
	}
	if (Server{}).NeedLeaderElection() {
		t.Error("a standby would serve no metrics")
	}
}
