// Command label-webhook is a small HTTPS admission webhook for testing the local host cluster: it denies objects
// that carry a given label, with a message read from a file on every request (so a test sees a mounted Secret's
// update through it) and prefixed by the pod's name (from $POD_NAME), and allows everything else. It serves
// /readyz for a readiness probe and re-reads its serving certificate when the files change. Standard library only,
// so a test builds it in a moment: the e2e suite (hostkubelet_test.go) builds it into an image and runs it as a pod
// on the local Karmada's host cluster.
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The parts of admission.k8s.io/v1 AdmissionReview the webhook reads and writes.
type review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *request  `json:"request,omitempty"`
	Response   *response `json:"response,omitempty"`
}

type request struct {
	UID    string          `json:"uid"`
	Object json.RawMessage `json:"object"`
}

type response struct {
	UID     string  `json:"uid"`
	Allowed bool    `json:"allowed"`
	Status  *status `json:"status,omitempty"`
}

type status struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
}

func main() {
	addr := flag.String("webhook-bind-address", ":8443", "Where the webhook serves HTTPS.")
	probeAddr := flag.String("health-probe-bind-address", ":8081", "Where /readyz is served over HTTP.")
	certDir := flag.String("cert-dir", "", "Folder holding tls.crt and tls.key.")
	messageFile := flag.String("message-file", "", "File whose content is the denial message.")
	denyLabel := flag.String("deny-label", "deny", "Objects with this label are denied.")
	flag.Parse()

	certs := &certificate{cert: filepath.Join(*certDir, "tls.crt"), key: filepath.Join(*certDir, "tls.key")}
	if _, err := certs.get(nil); err != nil {
		log.Fatalf("loading the serving certificate: %v", err)
	}
	pod := os.Getenv("POD_NAME")

	probes := http.NewServeMux()
	probes.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	go func() { log.Fatal(http.ListenAndServe(*probeAddr, probes)) }()

	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		var in review
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		var obj struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(in.Request.Object, &obj)
		out := review{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview",
			Response: &response{UID: in.Request.UID, Allowed: true}}
		if _, deny := obj.Metadata.Labels[*denyLabel]; deny {
			message, err := os.ReadFile(*messageFile)
			if err != nil {
				message = []byte(err.Error())
			}
			out.Response.Allowed = false
			out.Response.Status = &status{Code: http.StatusForbidden, Reason: "Forbidden",
				Message: fmt.Sprintf("%s: %s", pod, bytes.TrimSpace(message))}
		}
		log.Printf("%s %s allowed=%v", pod, obj.Metadata.Name, out.Response.Allowed)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	server := &http.Server{
		Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{GetCertificate: certs.get, MinVersion: tls.VersionTLS12},
	}
	log.Printf("%s serving on %s (probes on %s)", pod, *addr, *probeAddr)
	log.Fatal(server.ListenAndServeTLS("", ""))
}

// certificate reloads the key pair when either file changes, as a webhook must when its Secret is renewed.
type certificate struct {
	cert, key string
	mu        sync.Mutex
	loaded    *tls.Certificate
	stamp     string
}

func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var stamp strings.Builder
	for _, f := range []string{c.cert, c.key} {
		info, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&stamp, "%d/%d;", info.ModTime().UnixNano(), info.Size())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded != nil && c.stamp == stamp.String() {
		return c.loaded, nil
	}
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		return nil, err
	}
	c.loaded, c.stamp = &pair, stamp.String()
	return c.loaded, nil
}
