// Package kubectlplugin is `kubectl karmada quota`, the kubectl plugin that reads KarmadaQuotas: describe a quota,
// list quotas across namespaces fullest first, and say why a workload is or is not scheduled; that reads business
// quotas, each team its namespace's part (describe) and cluster admins the whole (business); and that converts
// Karmada's FederatedResourceQuotas into KarmadaQuotas (convert-frq). It owns the flags,
// the requests to the karmada-apiserver and the explanation of their failures; what is printed is computed and
// rendered by the pure package report.
package kubectlplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/yaml"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin/report"
	"github.com/karmada-quota/karmada-quota/pkg/version"
)

// Run runs the plugin with args (without the program name), prints a failure as kubectl does ("error: ..." on
// stderr), and returns the exit code: 0, or 1 for any failure.
func Run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %s\n", err)
		return 1
	}
	return 0
}

// options are what every subcommand shares: kubectl's connection flags (--kubeconfig, --context, -n, --as, ...)
// and the streams.
type options struct {
	config  *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
}

// NewCommand returns the plugin's root command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:   "kubectl-karmada-quota",
		Short: "Read KarmadaQuotas: what each namespace may use across member clusters, and why a workload waits",
		Long: "Read KarmadaQuotas on the karmada-apiserver: what each namespace may use across all member clusters, what\n" +
			"it uses in each, which bindings wait for quota, and why a workload is or is not scheduled; read business\n" +
			"quotas, which limit the namespaces of a business together (describe shows a namespace's part, business the\n" +
			"whole); and convert Karmada's FederatedResourceQuotas into KarmadaQuotas.",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: displayName(os.Args[0])},
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.config.AddFlags(root.PersistentFlags())
	root.AddCommand(newDescribeCommand(o), newListCommand(o, false), newListCommand(o, true), newWhyCommand(o),
		newBusinessCommand(o), newConvertFRQCommand(o, nil))
	return root
}

// displayName is how kubectl users type the command that ran this binary, from its file name, by kubectl's plugin
// rule read backwards: each "-" of the file name is a space, each "_" a "-" (kubectl-karmada-quota is `kubectl
// karmada quota`; krew's link kubectl-karmada_quota is `kubectl karmada-quota`).
func displayName(argv0 string) string {
	// Split by hand: a Windows path's backslashes are no separator to filepath on other systems.
	base := argv0[strings.LastIndexAny(argv0, `/\`)+1:]
	base = strings.TrimSuffix(base, ".exe")
	if !strings.HasPrefix(base, "kubectl-") {
		return "kubectl karmada quota"
	}
	words := strings.Split(base, "-")
	for i, w := range words {
		words[i] = strings.ReplaceAll(w, "_", "-")
	}
	return strings.Join(words, " ")
}

// output is the -o flag of a command that prints a table.
type output struct {
	format string
}

func (f *output) addFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.format, "output", "o", "", "Output format: json or yaml. Empty prints text.")
}

func (f *output) validate() error {
	switch f.format {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q: use json or yaml, or leave -o out for text", f.format)
}

// print writes obj as JSON or YAML, or calls text for the text rendering.
func (f *output) print(out io.Writer, obj any, text func(io.Writer) error) error {
	switch f.format {
	case "json":
		b, err := json.MarshalIndent(obj, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	return text(out)
}

func (o *options) namespace() (string, error) {
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

func (o *options) reader() (*reader, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return newReader(cfg)
}

func newDescribeCommand(o *options) *cobra.Command {
	var out output
	cmd := &cobra.Command{
		Use:   "describe [NAME]",
		Short: "Show a quota's limits, use, use per member cluster, and the bindings waiting on it",
		Long: "Show a KarmadaQuota as `kubectl describe resourcequota` shows a ResourceQuota: Name, Namespace, Scopes, and a\n" +
			"Resource / Used / Reserved / Hard table; then whether its status is current, what the namespace uses in\n" +
			"each member cluster (with Reserved and Hard there for a cluster with a limit of its own, and one not joined\n" +
			"yet marked), its limits on groups of member clusters with the clusters each selects, and the bindings waiting\n" +
			"for quota whose needs it limits, with what each asks for and what is missing here; then the reservations not\n" +
			"yet observed, each held by a binding (its placement) or by a Work (what its member cluster runs beyond the\n" +
			"binding's placement). Without NAME, every quota of the namespace.\n\n" +
			"A business quota, which limits the namespaces of a business together, is shown too, as the namespace sees it\n" +
			"(its AppliedBusinessQuota, which the stock view role reads): the business's Used, Reserved and Hard, what this\n" +
			"namespace uses of it, its limits on member clusters, and the namespace's bindings waiting on it; nothing of\n" +
			"the business's other namespaces. Cluster admins read the whole with `business NAME`. A NAME held by both a\n" +
			"KarmadaQuota and a business quota shows both (-o json prints a list then).",
		Example: "  kubectl karmada quota describe team-a -n team-a\n  kubectl karmada quota describe -n team-a -o yaml",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			r, err := o.reader()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var quotas []quotav1alpha1.KarmadaQuota
			var applied []quotav1alpha1.AppliedBusinessQuota
			if len(args) == 1 {
				if quotas, applied, err = r.quotasNamed(ctx, ns, args[0]); err != nil {
					return err
				}
			} else {
				if quotas, err = r.quotas(ctx, ns); err != nil {
					return err
				}
				if applied, err = r.appliedQuotas(ctx, ns); err != nil {
					// Business quotas are shown to those who may read them, where they exist: a role without them,
					// or a karmada-quota without them, still gets the namespace's own quotas.
					if !unreadable(err) {
						return err
					}
					applied = nil
				}
			}
			if len(quotas)+len(applied) == 0 {
				if out.format != "" {
					return out.print(o.streams.Out, report.QuotaList{Items: []report.Quota{}}, nil)
				}
				fmt.Fprintf(o.streams.ErrOut, "No KarmadaQuotas found in namespace %s.\n", ns)
				return nil
			}

			bindings, err := r.bindings(ctx, ns)
			waitingUnknown := ""
			if err != nil {
				// Someone allowed to read quotas but not bindings still gets the quota.
				if !apierrors.IsForbidden(err) {
					return err
				}
				waitingUnknown = fmt.Sprintf("you may not list ResourceBindings in namespace %s", ns)
				fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", err)
			}
			var ledgers report.Ledgers
			if len(quotas) > 0 {
				var warning string
				if ledgers, warning, err = r.ledgers(ctx, ns); err != nil {
					return err
				}
				if warning != "" {
					fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", warning)
				}
			}
			described := make([]report.Quota, 0, len(quotas)+len(applied))
			for i := range quotas {
				described = append(described, report.Describe(&quotas[i], ledgers.Of(&quotas[i]), bindings))
			}
			for i := range applied {
				described = append(described, report.DescribeApplied(&applied[i], bindings))
			}
			for i := range described {
				described[i].WaitingUnknown = waitingUnknown
			}
			var obj any = report.QuotaList{Items: described}
			if len(args) == 1 && len(described) == 1 {
				obj = described[0]
			}
			return out.print(o.streams.Out, obj, func(w io.Writer) error { return report.WriteQuotas(w, described) })
		},
	}
	out.addFlag(cmd)
	return cmd
}

// quotasNamed finds what `describe NAME` names in a namespace: its KarmadaQuota, and the business quota of that
// name applying there (its AppliedBusinessQuota), whichever exist. Neither is an error naming both; a refused or
// failed read of the KarmadaQuota is that read's error, whatever the business quotas.
func (r *reader) quotasNamed(ctx context.Context, namespace, name string) ([]quotav1alpha1.KarmadaQuota, []quotav1alpha1.AppliedBusinessQuota, error) {
	var quotas []quotav1alpha1.KarmadaQuota
	q, quotaErr := r.quota(ctx, namespace, name)
	switch {
	case quotaErr == nil:
		quotas = append(quotas, *q)
	case !missingObject(quotaErr):
		return nil, nil, quotaErr
	}
	a, appliedErr := r.appliedQuota(ctx, namespace, name)
	switch {
	case appliedErr == nil:
		return quotas, []quotav1alpha1.AppliedBusinessQuota{*a}, nil
	case missingObject(appliedErr):
		if len(quotas) == 0 {
			return nil, nil, &apiError{server: r.server, err: quotaErr, call: call{verb: "get", resource: groupResource(quotasResource),
				kind: "KarmadaQuota or business quota (AppliedBusinessQuota)", namespace: namespace, name: name}}
		}
	case unreadable(appliedErr):
		// Not knowing the business quotas, it is the KarmadaQuota that is missing, if any is.
		if len(quotas) == 0 {
			return nil, nil, quotaErr
		}
	default:
		return nil, nil, appliedErr
	}
	return quotas, nil, nil
}

func newListCommand(o *options, top bool) *cobra.Command {
	var out output
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every limited resource of every quota, by namespace and name",
		Long: "List one row per quota and limited resource: used, hard, percent used, and whether the quota's status is\n" +
			"current. Sorted by namespace, quota and resource, so a quota's resources stay together; `top` prints the\n" +
			"same rows fullest first.\n\n" + businessRowsHelp,
		Example: "  kubectl karmada quota list -A\n  kubectl karmada quota list -n team-a -o json",
	}
	if top {
		cmd.Use = "top"
		cmd.Short = "List every limited resource of every quota, fullest first"
		cmd.Long = "List one row per quota and limited resource: used, hard, percent used, and whether the quota's status is\n" +
			"current. Sorted fullest first across all quotas (then by namespace, quota and resource), so what is about to\n" +
			"refuse placements comes first; `list` prints the same rows by name.\n\n" + businessRowsHelp
		cmd.Example = "  kubectl karmada quota top -A"
	}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.validate(); err != nil {
			return err
		}
		ns := ""
		if !allNamespaces {
			var err error
			if ns, err = o.namespace(); err != nil {
				return err
			}
		}
		r, err := o.reader()
		if err != nil {
			return err
		}
		quotas, err := r.quotas(cmd.Context(), ns)
		if err != nil {
			return err
		}
		business, err := r.businessRows(cmd.Context(), ns)
		if err != nil {
			return err
		}
		rows := append(report.Rows(quotas), business...)
		report.SortByName(rows)
		if top {
			report.SortFullest(rows)
		}
		if rows == nil {
			rows = []report.Row{}
		}
		if len(rows) == 0 && out.format == "" {
			if allNamespaces {
				fmt.Fprintln(o.streams.ErrOut, "No KarmadaQuotas found.")
			} else {
				fmt.Fprintf(o.streams.ErrOut, "No KarmadaQuotas found in namespace %s.\n", ns)
			}
			return nil
		}
		return out.print(o.streams.Out, report.RowList{Items: rows}, func(w io.Writer) error {
			return report.WriteRows(w, rows, allNamespaces)
		})
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "List the quotas of every namespace.")
	out.addFlag(cmd)
	return cmd
}

// businessRowsHelp says how `list` and `top` show business quotas.
const businessRowsHelp = "Business quotas, which limit the namespaces of a business together, are listed with \"(business)\" after\n" +
	"their name, and the business's used and hard. Across namespaces (-A), each is listed once, with \"*\" for its\n" +
	"namespaces (its KarmadaBusinessQuota, which cluster admins read); in a namespace, those that apply to it (its\n" +
	"AppliedBusinessQuotas, which the stock view role reads, status Applied). Across namespaces for someone who may\n" +
	"not read KarmadaBusinessQuotas, each is listed in every namespace it applies to; those you may not read at all\n" +
	"are left out."

// businessRows lists the rows of the business quotas a reader of namespace (every namespace when empty) may see:
// across namespaces, every KarmadaBusinessQuota, or for someone who may not list them, the AppliedBusinessQuotas
// of every namespace; in a namespace, its AppliedBusinessQuotas. None when they may not be read.
func (r *reader) businessRows(ctx context.Context, namespace string) ([]report.Row, error) {
	if namespace == "" {
		business, err := r.businessQuotas(ctx)
		if err == nil {
			return report.BusinessRows(business), nil
		}
		if !unreadable(err) {
			return nil, err
		}
	}
	applied, err := r.appliedQuotas(ctx, namespace)
	if err != nil {
		if unreadable(err) {
			return nil, nil
		}
		return nil, err
	}
	return report.AppliedRows(applied), nil
}

func newWhyCommand(o *options) *cobra.Command {
	var out output
	cmd := &cobra.Command{
		Use:   "why (DEPLOYMENT | KIND/NAME | KIND NAME)",
		Short: "Say why a workload is or is not scheduled, as far as quotas go",
		Long: "Find the workload's ResourceBinding and say why it is or is not scheduled. Refused by quota: each refusing quota,\n" +
			"recomputed from its status with the webhook's arithmetic, with every short resource's need, availability and\n" +
			"shortfall, and whether it can ever fit; a limit on one member cluster or a group of them as the scheduler's\n" +
			"message names it, with what the placement asked there against the limit's room now. Scheduled: what each quota of the namespace charges it, per member\n" +
			"cluster. Scheduled, but a member's Work refused by quota (WorkRefused: an OverridePolicy raising requests, a\n" +
			"DaemonSet's pod per node, a CronJob's Jobs), as Karmada last reported it in a SyncWorkFailed event on the\n" +
			"binding: each member's refusal and what to do. A bare NAME is a Deployment; KIND is any kind kubectl knows\n" +
			"(deploy, statefulset.apps, a CRD). Business quotas that apply to the namespace are read from its\n" +
			"AppliedBusinessQuotas; one the refusal names that cannot be read is shown as the refusal's message said it.",
		Example: "  kubectl karmada quota why web -n team-a\n  kubectl karmada quota why statefulset/db -n team-a -o json",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			if len(args) == 1 && !strings.Contains(args[0], "/") {
				args = []string{"deployment", args[0]}
			}
			r, err := o.reader()
			if err != nil {
				return err
			}
			// The plain reads first: an unreachable server or a missing right fails with one clear message here,
			// before discovery (which the workload lookup needs) logs its own retries.
			ctx := cmd.Context()
			bindings, err := r.bindings(ctx, ns)
			if err != nil {
				return err
			}
			quotas, err := r.quotas(ctx, ns)
			if err != nil {
				return err
			}
			var applied report.AppliedBusinessQuotas
			if applied.Items, err = r.appliedQuotas(ctx, ns); err != nil {
				// Needed only to explain a business quota's refusal, which the answer then names from its message.
				if !unreadable(err) {
					return err
				}
				applied.Unknown = fmt.Sprintf("you may not list AppliedBusinessQuotas in namespace %s", ns)
				if !apierrors.IsForbidden(err) {
					applied.Unknown = "the karmada-apiserver serves no AppliedBusinessQuotas"
				}
			}
			ledgers, warning, err := r.ledgers(ctx, ns)
			if err != nil {
				return err
			}
			if warning != "" {
				fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", warning)
			}
			workload, err := o.workload(ns, args)
			if err != nil {
				return err
			}
			rb := bindingOf(workload, bindings)
			var events report.Events
			var eventsErr error
			if rb != nil {
				// Whether quota refuses a placed workload's Works is only in Karmada's events on the binding. Reading
				// them is not required: without them the answer says it does not know, and the command succeeds.
				if events.Items, eventsErr = r.bindingEvents(ctx, rb); eventsErr != nil {
					events.Unknown = eventsUnknown(ns, eventsErr)
				}
			}
			why := report.Explain(workload, rb, quotas, applied, ledgers, events)
			if why.EventsUnknown != "" {
				fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", eventsErr)
			}
			return out.print(o.streams.Out, why, func(w io.Writer) error { return report.WriteWhy(w, why) })
		},
	}
	out.addFlag(cmd)
	return cmd
}

// eventsUnknown says, for the output, why a binding's events could not be read.
func eventsUnknown(namespace string, err error) string {
	if apierrors.IsForbidden(err) {
		return fmt.Sprintf("you may not list events in namespace %s", namespace)
	}
	return "the binding's events could not be read"
}

// workload finds the object args name, as `kubectl get` would (short names, kind.group, CRDs), so that "no such
// workload" is told apart from "no binding for it".
func (o *options) workload(namespace string, args []string) (report.Workload, error) {
	infos, err := resource.NewBuilder(o.config).
		Unstructured().
		NamespaceParam(namespace).DefaultNamespace().
		ResourceTypeOrNameArgs(true, args...).
		SingleResourceType().
		Flatten().
		Do().Infos()
	if err != nil {
		return report.Workload{}, o.explainLookup(namespace, err)
	}
	if len(infos) != 1 {
		return report.Workload{}, fmt.Errorf("%s names %d objects: name exactly one workload", strings.Join(args, " "), len(infos))
	}
	info := infos[0]
	gvk := info.Mapping.GroupVersionKind
	if info.Mapping.Scope.Name() == meta.RESTScopeNameRoot {
		return report.Workload{}, fmt.Errorf("%s %s is cluster-scoped: Karmada binds it with a ClusterResourceBinding, "+
			"and KarmadaQuotas limit namespaces", gvk.Kind, info.Name)
	}
	return report.Workload{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: info.Namespace, Name: info.Name}, nil
}

// explainLookup explains a failure to find the workload: a missing object or a refused read is an API error
// like any other; anything else (an unknown kind) is the builder's own message, which kubectl users know.
func (o *options) explainLookup(namespace string, err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) && !unreachable(err) {
		return err
	}
	c := call{verb: "get", resource: "the workload", kind: "workload", namespace: namespace}
	if status != nil {
		if d := status.Status().Details; d != nil {
			gr := schema.GroupResource{Group: d.Group, Resource: d.Kind}.String()
			c.resource, c.kind, c.name = gr, gr, d.Name
		}
	}
	server := ""
	if cfg, cfgErr := o.config.ToRESTConfig(); cfgErr == nil {
		server = cfg.Host
	}
	return &apiError{call: c, server: server, err: err}
}

// bindingOf finds the workload's ResourceBinding by spec.resource: its group, kind, namespace and name. The
// detector names it <name>-<kind>, but a name can be truncated or taken; the reference cannot.
func bindingOf(w report.Workload, bindings []workv1alpha2.ResourceBinding) *workv1alpha2.ResourceBinding {
	want, err := schema.ParseGroupVersion(w.APIVersion)
	if err != nil {
		return nil
	}
	var found *workv1alpha2.ResourceBinding
	for i := range bindings {
		ref := bindings[i].Spec.Resource
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != want.Group || ref.Kind != w.Kind || ref.Name != w.Name {
			continue
		}
		if ref.Namespace != "" && ref.Namespace != w.Namespace {
			continue
		}
		if found == nil || bindings[i].Name < found.Name {
			found = &bindings[i]
		}
	}
	return found
}
