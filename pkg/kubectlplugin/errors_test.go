package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAPIErrorExplains(t *testing.T) {
	quotas := schema.GroupResource{Group: "quota.karmada.io", Resource: "karmadaquotas"}
	getQuota := call{verb: "get", resource: "karmadaquotas.quota.karmada.io", kind: "KarmadaQuota", namespace: "team-a", name: "team-x"}
	listBindings := call{verb: "list", resource: "resourcebindings.work.karmada.io", kind: "ResourceBinding", namespace: "team-a"}
	listAll := call{verb: "list", resource: "karmadaquotas.quota.karmada.io", kind: "KarmadaQuota"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/apis/quota.karmada.io/v1alpha1/namespaces/team-a/karmadaquotas/team-x",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}

	cases := map[string]struct {
		call call
		err  error
		want string
	}{
		"no such quota": {
			call: getQuota,
			err:  apierrors.NewNotFound(quotas, "team-x"),
			want: `no KarmadaQuota named "team-x" in namespace "team-a"`,
		},
		"the API is not served: not a karmada-apiserver, or karmada-quota not installed": {
			call: getQuota,
			// What client-go makes of the apiserver's plain-text 404 for a path it does not serve.
			err: apierrors.NewGenericServerResponse(http.StatusNotFound, "get", quotas, "team-x", "404 page not found", 0, true),
			want: "the server at https://karmada.example:5443 does not serve karmadaquotas.quota.karmada.io: point --kubeconfig or " +
				"--context at the karmada-apiserver, and check that karmada-quota is installed there",
		},
		"no right in a namespace: which verb on which resource, and the role that grants it": {
			call: listBindings,
			err: apierrors.NewForbidden(schema.GroupResource{Group: "work.karmada.io", Resource: "resourcebindings"}, "",
				errors.New(`User "jane" cannot list resource "resourcebindings" in API group "work.karmada.io" in the namespace "team-a"`)),
			want: `you may not list resourcebindings.work.karmada.io in namespace "team-a" (the karmada-apiserver said: ` +
				`resourcebindings.work.karmada.io is forbidden: User "jane" cannot list resource "resourcebindings" in API group "work.karmada.io" in the namespace "team-a").` + "\n" +
				`Once karmada-quota is installed, the stock view role grants reading KarmadaQuotas and ResourceBindings: ` +
				`ask an admin for a RoleBinding to the ClusterRole view in namespace "team-a"`,
		},
		"no right to read events: the stock view role grants it, karmada-quota or not": {
			call: call{verb: "list", resource: "events", kind: "Event", namespace: "team-a"},
			err: apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "",
				errors.New(`User "jane" cannot list resource "events" in API group "" in the namespace "team-a"`)),
			want: `you may not list events in namespace "team-a" (the karmada-apiserver said: ` +
				`events is forbidden: User "jane" cannot list resource "events" in API group "" in the namespace "team-a").` + "\n" +
				`The stock view role grants reading events: ask an admin for a RoleBinding to the ClusterRole view in namespace "team-a"`,
		},
		"no right across namespaces": {
			call: listAll,
			err:  apierrors.NewForbidden(quotas, "", errors.New(`User "jane" cannot list resource "karmadaquotas" in API group "quota.karmada.io" at the cluster scope`)),
			want: `you may not list karmadaquotas.quota.karmada.io across all namespaces (the karmada-apiserver said: ` +
				`karmadaquotas.quota.karmada.io is forbidden: User "jane" cannot list resource "karmadaquotas" in API group "quota.karmada.io" at the cluster scope).` + "\n" +
				`Once karmada-quota is installed, the stock view role grants reading KarmadaQuotas and ResourceBindings: ` +
				`ask an admin for a ClusterRoleBinding to the ClusterRole view`,
		},
		"no such business quota: it has no namespace": {
			call: call{verb: "get", resource: "karmadabusinessquotas.quota.karmada.io", kind: "KarmadaBusinessQuota", name: "shop", clusterScoped: true},
			err:  apierrors.NewNotFound(schema.GroupResource{Group: "quota.karmada.io", Resource: "karmadabusinessquotas"}, "shop"),
			want: `no KarmadaBusinessQuota named "shop"`,
		},
		"no right to read business quotas: no stock role grants it, and what a team reads instead": {
			call: call{verb: "list", resource: "karmadabusinessquotas.quota.karmada.io", kind: "KarmadaBusinessQuota", clusterScoped: true},
			err: apierrors.NewForbidden(schema.GroupResource{Group: "quota.karmada.io", Resource: "karmadabusinessquotas"}, "",
				errors.New(`User "jane" cannot list resource "karmadabusinessquotas" in API group "quota.karmada.io" at the cluster scope`)),
			want: `you may not list karmadabusinessquotas.quota.karmada.io (the karmada-apiserver said: karmadabusinessquotas.quota.karmada.io ` +
				`is forbidden: User "jane" cannot list resource "karmadabusinessquotas" in API group "quota.karmada.io" at the cluster scope).` + "\n" +
				"A business quota names every namespace of its business and what each uses, so no stock role grants reading it: " +
				"cluster admins do. A team reads the business quotas of its namespace, and its own part of them, with " +
				"`kubectl karmada quota describe -n NAMESPACE` (their AppliedBusinessQuotas, which the stock view role reads)",
		},
		"anything else of a cluster-scoped resource: no namespace named": {
			call: call{verb: "list", resource: "karmadabusinessquotas.quota.karmada.io", kind: "KarmadaBusinessQuota", clusterScoped: true},
			err:  apierrors.NewInternalError(errors.New("etcd is down")),
			want: "list karmadabusinessquotas.quota.karmada.io: Internal error occurred: etcd is down",
		},
		"credentials refused": {
			call: getQuota,
			err:  apierrors.NewUnauthorized("Unauthorized"),
			want: "the karmada-apiserver at https://karmada.example:5443 does not accept your credentials (401 Unauthorized): check the user of your kubeconfig context",
		},
		"unreachable: the server and the transport's own error": {
			call: getQuota,
			err:  refused,
			want: "cannot reach the karmada-apiserver at https://karmada.example:5443: dial tcp: connect: connection refused",
		},
		"unreachable, wrapped": {
			call: getQuota,
			err:  fmt.Errorf("listing: %w", refused),
			want: "cannot reach the karmada-apiserver at https://karmada.example:5443: dial tcp: connect: connection refused",
		},
		"anything else: the call and the error": {
			call: listAll,
			err:  apierrors.NewInternalError(errors.New("etcd is down")),
			want: "list karmadaquotas.quota.karmada.io across all namespaces: Internal error occurred: etcd is down",
		},
		"a timeout of the caller's context is no transport failure": {
			call: listBindings,
			err:  context.DeadlineExceeded,
			want: `list resourcebindings.work.karmada.io in namespace "team-a": context deadline exceeded`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := &apiError{call: tc.call, server: "https://karmada.example:5443", err: tc.err}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("the explained error does not wrap the client's")
			}
		})
	}
}

func TestDisplayName(t *testing.T) {
	cases := map[string]string{
		// go install: kubectl's longest match finds it for `kubectl karmada quota`.
		"/home/u/go/bin/kubectl-karmada-quota": "kubectl karmada quota",
		// krew links the plugin karmada-quota as kubectl-karmada_quota: `kubectl karmada-quota`.
		"/home/u/.krew/bin/kubectl-karmada_quota": "kubectl karmada-quota",
		`C:\krew\bin\kubectl-karmada_quota.exe`:   "kubectl karmada-quota",
		// A test binary or a renamed copy: the documented name.
		"/tmp/go-build/cli.test": "kubectl karmada quota",
	}
	for argv0, want := range cases {
		if got := displayName(argv0); got != want {
			t.Errorf("displayName(%q) = %q, want %q", argv0, got, want)
		}
	}
}
