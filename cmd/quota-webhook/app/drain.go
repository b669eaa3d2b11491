package app

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// drain keeps a stopping replica from failing binding writes. The karmada-apiserver holds long-lived
// connections to the webhook (one HTTP/2 connection carries every call), and a Service only stops routing *new*
// connections to a terminating pod. Closing the port on SIGTERM, or even a graceful HTTP shutdown, would cut
// connections a call may be travelling on: Go's server closes an HTTP/2 connection the moment it has no request in
// flight, right after its GOAWAY, and a call the karmada-apiserver sent meanwhile fails with a broken pipe, which
// it does not retry. So a stopping replica first reports itself unready and answers every call with
// "Connection: close", which makes Go's server send GOAWAY on that connection and close it a second after its
// last call: the karmada-apiserver moves to a new connection, to a ready replica, while this one still serves.
// Only after the delay does the server shut down.
type drain struct {
	draining atomic.Bool
}

// server wraps a webhook server so that every webhook it serves closes its connections while draining.
func (d *drain) server(s webhook.Server) webhook.Server {
	return &drainingServer{Server: s, drain: d}
}

type drainingServer struct {
	webhook.Server
	drain *drain
}

func (s *drainingServer) Register(path string, hook http.Handler) {
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.drain.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		hook.ServeHTTP(w, r)
	}))
}

// after returns a context that ends delay after ctx does, draining from the moment ctx ends.
func (d *drain) after(ctx context.Context, delay time.Duration) context.Context {
	stopped, stop := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		<-ctx.Done()
		d.draining.Store(true)
		time.Sleep(delay)
		stop()
	}()
	return stopped
}
