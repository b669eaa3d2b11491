package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// call is one request the plugin makes, named so that a failure can say what was refused.
type call struct {
	verb string
	// resource is the resource's full name, resource.group (karmadaquotas.quota.karmada.io).
	resource string
	// kind is what a person calls one object of it (KarmadaQuota).
	kind string
	// namespace is empty across all namespaces, and for a cluster-scoped resource.
	namespace string
	name      string
	// clusterScoped is set for a resource that has no namespace (karmadabusinessquotas).
	clusterScoped bool
}

// Kinds of the plugin's calls the explanations tell apart.
const (
	kindBusinessQuota       = "KarmadaBusinessQuota"
	kindBusinessQuotaLedger = "KarmadaBusinessQuotaLedger"
)

// businessForAdmins says who reads business quotas, and what a team reads instead.
const businessForAdmins = "A business quota names every namespace of its business and what each uses, so no stock role grants " +
	"reading it: cluster admins do. A team reads the business quotas of its namespace, and its own part of them, with " +
	"`kubectl karmada quota describe -n NAMESPACE` (their AppliedBusinessQuotas, which the stock view role reads)"

// apiError is a failed call, explained for the person who made it. Errors carry the call and the server's URL
// rather than the raw client error, whose wording ("the server could not find the requested resource") does not
// say which of the plugin's requests failed or what to do.
type apiError struct {
	call   call
	server string
	err    error
}

func (e *apiError) Unwrap() error { return e.err }

func (e *apiError) Error() string {
	c, err := e.call, e.err
	var status apierrors.APIStatus
	isStatus := errors.As(err, &status)
	switch {
	case apierrors.IsNotFound(err) && apiNotServed(status):
		return fmt.Sprintf("the server at %s does not serve %s: point --kubeconfig or --context at the karmada-apiserver, "+
			"and check that karmada-quota is installed there", e.server, c.resource)
	case apierrors.IsNotFound(err) && c.name != "" && c.clusterScoped:
		return fmt.Sprintf("no %s named %q", c.kind, c.name)
	case apierrors.IsNotFound(err) && c.name != "":
		return fmt.Sprintf("no %s named %q in namespace %q", c.kind, c.name, c.namespace)
	case apierrors.IsForbidden(err) && (c.kind == kindBusinessQuota || c.kind == kindBusinessQuotaLedger):
		return fmt.Sprintf("you may not %s %s (the karmada-apiserver said: %s).\n%s", c.verb, c.resource, status.Status().Message, businessForAdmins)
	case apierrors.IsForbidden(err):
		where := fmt.Sprintf("in namespace %q", c.namespace)
		grant := fmt.Sprintf("a RoleBinding to the ClusterRole view in namespace %q", c.namespace)
		if c.namespace == "" {
			where, grant = "across all namespaces", "a ClusterRoleBinding to the ClusterRole view"
		}
		grants := "Once karmada-quota is installed, the stock view role grants reading KarmadaQuotas and ResourceBindings"
		if c.kind == "Event" {
			grants = "The stock view role grants reading events"
		}
		return fmt.Sprintf("you may not %s %s %s (the karmada-apiserver said: %s).\n"+
			"%s: ask an admin for %s", c.verb, c.resource, where, status.Status().Message, grants, grant)
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("the karmada-apiserver at %s does not accept your credentials (401 Unauthorized): "+
			"check the user of your kubeconfig context", e.server)
	case !isStatus && unreachable(err):
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return fmt.Sprintf("cannot reach the karmada-apiserver at %s: %v", e.server, err)
	}
	where := fmt.Sprintf(" in namespace %q", c.namespace)
	switch {
	case c.clusterScoped:
		where = ""
	case c.namespace == "":
		where = " across all namespaces"
	}
	return fmt.Sprintf("%s %s%s: %v", c.verb, c.resource, where, err)
}

// unreachable reports an error of the transport, before any answer from the server: connection refused, timed
// out, name not resolved, TLS failed.
// context.DeadlineExceeded is a net.Error too, but on its own it is the caller giving up, not the transport.
func unreachable(err error) bool {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && !errors.Is(err, context.DeadlineExceeded)
}

// apiNotServed tells a 404 for a resource the server does not serve at all (the CRD is not installed; this is
// not a Karmada control plane) from a 404 for one missing object: the former is not a Status the apiserver
// wrote, and client-go records the raw body as an unexpected server response.
func apiNotServed(status apierrors.APIStatus) bool {
	if status == nil {
		return false
	}
	details := status.Status().Details
	if details == nil {
		return true
	}
	for _, cause := range details.Causes {
		if cause.Type == metav1.CauseTypeUnexpectedServerResponse {
			return true
		}
	}
	return false
}

// asStatus is the API status an error carries; nil when it carries none.
func asStatus(err error) apierrors.APIStatus {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status
	}
	return nil
}

// missingObject reports a 404 for one object of a resource the server serves: no object of that name.
func missingObject(err error) bool {
	return apierrors.IsNotFound(err) && !apiNotServed(asStatus(err))
}

// unreadable reports an error saying that the user may not read a resource, or that the server does not serve it
// (a karmada-quota from before business quotas): what the plugin reads besides what was asked for is skipped on it.
func unreadable(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) && apiNotServed(asStatus(err))
}
