package localkarmada

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What a fault test does to the environment besides Kill and Start: stop a process the way a restart does, and take
// a member cluster out of Karmada and back.

// Stop stops a recorded process as an orderly stop does (a rolling update, `systemctl stop`): SIGTERM to its
// process group, so it finishes what it is serving, then SIGKILL if it is still there after grace. It stays down
// until Start brings it back.
func (e *Environment) Stop(name string, grace time.Duration) error {
	return e.update(func() error {
		p, err := e.Process(name)
		if err != nil {
			return err
		}
		if !p.Alive() {
			return fmt.Errorf("%s is not running", name)
		}
		p.Held = true
		return p.stop(grace)
	})
}

// RestartWith stops a recorded process as Stop does and starts it again with its arguments as edit returns them,
// which it keeps from then on (Start, Down), then waits until it is ready: a component reconfigured by an admin.
func (e *Environment) RestartWith(ctx context.Context, name string, grace time.Duration, edit func(args []string) []string) error {
	err := e.update(func() error {
		p, err := e.Process(name)
		if err != nil {
			return err
		}
		p.Held = true
		if err := p.stop(grace); err != nil {
			return err
		}
		p.Args = edit(slices.Clone(p.Args))
		return nil
	})
	if err != nil {
		return err
	}
	return e.Start(ctx, name)
}

// WithFlag is an edit for RestartWith: the process's --name=value, replacing any it had.
func WithFlag(name, value string) func(args []string) []string {
	flag := "--" + name + "="
	return func(args []string) []string {
		args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, flag) })
		return append(args, flag+value)
	}
}

// WithFeatureGate is an edit for RestartWith: the process's --feature-gates with gate set to on (the flag added
// when missing, the gate removed when off).
func WithFeatureGate(gate string, on bool) func(args []string) []string {
	const flag = "--feature-gates="
	return func(args []string) []string {
		i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, flag) })
		var gates []string
		if i >= 0 {
			for _, g := range strings.Split(strings.TrimPrefix(args[i], flag), ",") {
				if g != "" && !strings.HasPrefix(g, gate+"=") {
					gates = append(gates, g)
				}
			}
		}
		if on {
			gates = append(gates, gate+"=true")
		}
		switch {
		case len(gates) == 0 && i >= 0:
			return slices.Delete(args, i, i+1)
		case len(gates) == 0:
			return args
		case i >= 0:
			args[i] = flag + strings.Join(gates, ",")
			return args
		}
		return append(args, flag+strings.Join(gates, ","))
	}
}

// Unjoin takes a member cluster out of Karmada as `karmadactl unjoin <name>` does when it is not given the member's
// kubeconfig (Karmada v1.18's pkg/karmadactl/unjoin): it deletes the Cluster object and leaves the member itself
// alone. Karmada's cluster controller then deletes the member's execution namespace, whose Works take what Karmada
// applied there with them, and keeps the Cluster (its finalizer) until no binding places anything there any more;
// the scheduler reschedules the bindings that do. Unjoined reports when the object is gone; `karmadactl unjoin`
// waits for that (--wait, 60s by default) and fails when it takes longer.
func (e *Environment) Unjoin(ctx context.Context, name string) error {
	karmada, err := Client(e.Karmada.Kubeconfig)
	if err != nil {
		return err
	}
	return karmada.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// Unjoined reports whether the member's Cluster object is gone from Karmada.
func (e *Environment) Unjoined(ctx context.Context, name string) (bool, error) {
	karmada, err := Client(e.Karmada.Kubeconfig)
	if err != nil {
		return false, err
	}
	err = karmada.Get(ctx, client.ObjectKey{Name: name}, &clusterv1alpha1.Cluster{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// Join registers an unjoined member with Karmada again, as `make up` joined it (Push mode, a fresh token), and
// waits until Karmada reports it Ready.
func (e *Environment) Join(ctx context.Context, name string) error {
	i := slices.IndexFunc(e.Members, func(m APIServer) bool { return m.Name == name })
	if i < 0 {
		return fmt.Errorf("no member cluster named %q in the environment", name)
	}
	caPEM, err := os.ReadFile(e.CA)
	if err != nil {
		return err
	}
	return e.joinMember(ctx, e.Members[i], caPEM)
}
