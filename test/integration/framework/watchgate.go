package framework

import (
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// WatchGate holds back the watch events of one resource from a process's informers while paused, as a slow watch
// does under load: what the process decides meanwhile, it decides on what it was told before.
type WatchGate struct {
	// resource is the plural name whose watch is held, as the request's path names it.
	resource string

	mu     sync.Mutex
	paused bool
	// resumed is closed when the gate opens again.
	resumed chan struct{}
}

// NewWatchGate returns an open gate for the watches of resource (a plural name, as in "karmadaquotas").
func NewWatchGate(resource string) *WatchGate {
	return &WatchGate{resource: resource, resumed: make(chan struct{})}
}

// Wrap returns a copy of cfg whose watches of the gate's resource read their events through the gate.
func (g *WatchGate) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || req.URL.Query().Get("watch") != "true" || !strings.HasSuffix(req.URL.Path, "/"+g.resource) {
				return resp, err
			}
			resp.Body = &gatedBody{ReadCloser: resp.Body, gate: g}
			return resp, nil
		})
	})
	return cfg
}

// Pause holds every event not yet read until Resume.
func (g *WatchGate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused {
		g.paused = true
		g.resumed = make(chan struct{})
	}
}

// Resume lets the held events through.
func (g *WatchGate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		g.paused = false
		close(g.resumed)
	}
}

// wait returns once the gate is open.
func (g *WatchGate) wait() {
	g.mu.Lock()
	paused, resumed := g.paused, g.resumed
	g.mu.Unlock()
	if paused {
		<-resumed
	}
}

type gatedBody struct {
	io.ReadCloser
	gate *WatchGate
}

// Read waits for the gate before and after reading: an event that arrived while it was open but is read while it
// is paused is held too.
func (b *gatedBody) Read(p []byte) (int, error) {
	b.gate.wait()
	n, err := b.ReadCloser.Read(p)
	b.gate.wait()
	return n, err
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
