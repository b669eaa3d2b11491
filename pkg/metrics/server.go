package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// Server serves Handler(Gatherer) on /metrics at Address, as a runnable of a controller-runtime manager: on every
// replica, leader or not, from the manager's start until it stops. It stands in for the manager's own metrics
// server, which serves a registry alone.
type Server struct {
	Address  string
	Gatherer prometheus.Gatherer
}

// Start listens, serves until ctx is done, then lets scrapes in flight finish for up to a minute.
func (s Server) Start(ctx context.Context) error {
	listener, err := net.Listen("tcp", s.Address)
	if err != nil {
		return fmt.Errorf("metrics server: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(s.Gatherer))
	// What controller-runtime's servers set: a client that never finishes its headers cannot hold a connection.
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 32 * time.Second}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := server.Shutdown(shutdown); err != nil {
			klog.ErrorS(err, "Shutting down the metrics server")
		}
	}()
	klog.InfoS("Serving metrics", "address", listener.Addr().String())
	if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics server: %w", err)
	}
	<-stopped
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: a standby serves its metrics too.
func (Server) NeedLeaderElection() bool { return false }
