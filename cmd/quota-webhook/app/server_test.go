package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

func TestDrainAfter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := &drain{}
	stopped := d.after(ctx, 200*time.Millisecond)

	select {
	case <-stopped.Done():
		t.Fatal("stopped before the signal")
	case <-time.After(50 * time.Millisecond):
	}
	if d.draining.Load() {
		t.Fatal("draining before the signal")
	}
	cancel()
	start := time.Now()
	<-stopped.Done()
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Errorf("stopped %s after the signal, want at least the 200ms delay", waited)
	}
	if !d.draining.Load() {
		t.Error("not draining while the delay ran")
	}
}

// recordingServer keeps what is registered with it.
type recordingServer struct {
	webhook.Server
	hooks map[string]http.Handler
}

func (s *recordingServer) Register(path string, hook http.Handler) { s.hooks[path] = hook }

func TestDrainingServerClosesConnections(t *testing.T) {
	d := &drain{}
	inner := &recordingServer{hooks: map[string]http.Handler{}}
	d.server(inner).Register("/validate", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	serve := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		inner.hooks["/validate"].ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate", nil))
		return rec
	}
	if got := serve().Header().Get("Connection"); got != "" {
		t.Errorf("Connection = %q while serving, want none: connections are kept", got)
	}
	d.draining.Store(true)
	if got := serve().Header().Get("Connection"); got != "close" {
		t.Errorf("Connection = %q while draining, want close", got)
	}
}
