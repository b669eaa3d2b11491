package kubectlplugin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// fieldManager names the plugin in the managedFields of the KarmadaQuotas it writes.
const fieldManager = "kubectl-karmada-quota"

var (
	frqResource   = policyv1alpha1.SchemeGroupVersion.WithResource(policyv1alpha1.ResourcePluralFederatedResourceQuota)
	frqAPIVersion = policyv1alpha1.SchemeGroupVersion.String()
)

// convertClient returns the client convert-frq reads FederatedResourceQuotas and writes KarmadaQuotas with, and
// the server's URL for its messages. Tests give a fake.
type convertClient func() (client.Client, string, error)

// convertFRQ is the state of one run of convert-frq.
type convertFRQ struct {
	o             *options
	newClient     convertClient
	allNamespaces bool
	output        string
	apply         bool
	dryRun        string
	overwrite     bool
	skipInvalid   bool
	cl            client.Client
	server        string
	failed, frqs  int
	// droppable is set once a FederatedResourceQuota is refused for resource keys --skip-invalid-resources drops.
	droppable bool
}

func newConvertFRQCommand(o *options, newClient convertClient) *cobra.Command {
	c := &convertFRQ{o: o, newClient: newClient}
	if c.newClient == nil {
		c.newClient = o.controllerClient
	}
	cmd := &cobra.Command{
		Use:   "convert-frq [-n NAMESPACE | -A] [-o yaml|json] [--apply [--dry-run=server|client] [--overwrite]] [--skip-invalid-resources]",
		Short: "Convert Karmada's FederatedResourceQuotas into KarmadaQuotas: print them, or apply them",
		Long: "Read the FederatedResourceQuotas of the namespace (-n, or the kubeconfig's) or of every namespace (-A) from the\n" +
			"karmada-apiserver and make, for each, the KarmadaQuota of the same namespace and name that limits the same:\n" +
			"spec.overall becomes spec.hard (the whole federation) and each spec.staticAssignments entry a spec.clusters\n" +
			"entry (that member cluster's limit, enforced here at admission instead of by a ResourceQuota in the member).\n" +
			"\n" +
			"Without --apply, print them (YAML by default, each under a comment naming its FederatedResourceQuota; -o json\n" +
			"prints a List), sorted by namespace and name, for `kubectl apply -f`. With --apply, create each one; a\n" +
			"KarmadaQuota of that name that exists already is left as is unless it says the same (unchanged) or --overwrite\n" +
			"is given, which replaces its whole spec with the conversion. --dry-run=server sends the writes for the\n" +
			"karmada-apiserver and karmada-quota's webhook to check, and stores nothing; --dry-run=client sends none.\n" +
			"\n" +
			"A FederatedResourceQuota that karmada-quota would refuse as a KarmadaQuota (limits.*, an object count in a\n" +
			"cluster's limit, cpu and requests.cpu both, a fraction of a whole-unit resource) is not converted: its errors\n" +
			"are printed on stderr against its own fields, the others are converted, and the command fails at the end.\n" +
			"With --skip-invalid-resources, the refused keys are dropped instead and each is named on stderr (of two keys\n" +
			"for one resource, the smaller limit is kept); a cluster left with nothing to limit is dropped too.",
		Example: "  kubectl karmada quota convert-frq -n team-a > quotas.yaml\n" +
			"  kubectl karmada quota convert-frq -A --apply --dry-run=server\n" +
			"  kubectl karmada quota convert-frq -A --apply --skip-invalid-resources",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.BoolVarP(&c.allNamespaces, "all-namespaces", "A", false, "Convert the FederatedResourceQuotas of every namespace.")
	f.StringVarP(&c.output, "output", "o", "", "Output format without --apply: yaml (the default) or json.")
	f.BoolVar(&c.apply, "apply", false, "Create the KarmadaQuotas on the karmada-apiserver instead of printing them.")
	f.StringVar(&c.dryRun, "dry-run", "none", `With --apply: "none", "server" (the server checks each write and stores nothing) or "client" (nothing is sent).`)
	f.BoolVar(&c.overwrite, "overwrite", false, "With --apply: replace the spec of a KarmadaQuota of the same name that says otherwise.")
	f.BoolVar(&c.skipInvalid, "skip-invalid-resources", false, "Drop the resource keys karmada-quota refuses, naming each on stderr, instead of not converting their FederatedResourceQuota.")
	return cmd
}

// controllerClient is a controller-runtime client for the two kinds convert-frq reads and writes. Like reader, it
// knows their resources and needs no discovery; the server's warnings are printed as kubectl prints them.
func (o *options) controllerClient() (client.Client, string, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NewWarningWriter(o.streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	scheme := runtime.NewScheme()
	if err := quotav1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := policyv1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.AddSpecific(quotav1alpha1.GroupVersion.WithKind("KarmadaQuota"), quotasResource,
		quotav1alpha1.GroupVersion.WithResource("karmadaquota"), meta.RESTScopeNamespace)
	mapper.AddSpecific(policyv1alpha1.SchemeGroupVersion.WithKind(policyv1alpha1.ResourceKindFederatedResourceQuota), frqResource,
		policyv1alpha1.SchemeGroupVersion.WithResource(policyv1alpha1.ResourceSingularFederatedResourceQuota), meta.RESTScopeNamespace)
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, "", err
	}
	return c, cfg.Host, nil
}

func (c *convertFRQ) validateFlags() error {
	switch c.output {
	case "", "yaml", "json":
	default:
		return fmt.Errorf("unknown output format %q: use yaml or json", c.output)
	}
	switch c.dryRun {
	case "none", "server", "client":
	default:
		return fmt.Errorf(`--dry-run must be "none", "server" or "client", got %q`, c.dryRun)
	}
	if !c.apply {
		if c.dryRun != "none" {
			return errors.New("--dry-run goes with --apply: without --apply nothing is written, the KarmadaQuotas are printed")
		}
		if c.overwrite {
			return errors.New("--overwrite goes with --apply: without --apply nothing is written, the KarmadaQuotas are printed")
		}
	} else if c.output != "" {
		return errors.New("--apply prints one line per KarmadaQuota: leave -o out, or leave --apply out to print them")
	}
	return nil
}

func (c *convertFRQ) run(ctx context.Context) error {
	if err := c.validateFlags(); err != nil {
		return err
	}
	ns := ""
	if !c.allNamespaces {
		var err error
		if ns, err = c.o.namespace(); err != nil {
			return err
		}
	}
	var err error
	if c.cl, c.server, err = c.newClient(); err != nil {
		return err
	}
	var list policyv1alpha1.FederatedResourceQuotaList
	if err := c.cl.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return c.explain(call{verb: "list", resource: groupResource(frqResource), kind: policyv1alpha1.ResourceKindFederatedResourceQuota, namespace: ns}, err)
	}
	frqs := list.Items
	slices.SortFunc(frqs, func(a, b policyv1alpha1.FederatedResourceQuota) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	c.frqs = len(frqs)
	errOut := c.o.streams.ErrOut
	if len(frqs) == 0 {
		if c.allNamespaces {
			fmt.Fprintln(errOut, "No FederatedResourceQuotas found.")
		} else {
			fmt.Fprintf(errOut, "No FederatedResourceQuotas found in namespace %s.\n", ns)
		}
		if !c.apply && c.output == "json" {
			return printQuotaList(c.o.streams.Out, nil)
		}
		return nil
	}

	var converted []conversion
	for i := range frqs {
		conv, errs, droppable := convertOne(&frqs[i], c.skipInvalid)
		if len(errs) > 0 {
			c.failed++
			c.droppable = c.droppable || droppable
			fmt.Fprintf(errOut, "error: FederatedResourceQuota %s/%s cannot be converted: karmada-quota would refuse it as a KarmadaQuota "+
				"(whose spec.hard is spec.overall, and spec.clusters spec.staticAssignments):\n",
				frqs[i].Namespace, frqs[i].Name)
			for _, e := range errs {
				fmt.Fprintf(errOut, "  %s\n", e.Error())
			}
			continue
		}
		for _, d := range conv.dropped {
			fmt.Fprintf(errOut, "Warning: FederatedResourceQuota %s/%s: dropped %s\n", frqs[i].Namespace, frqs[i].Name, d)
		}
		converted = append(converted, conv)
	}

	if c.apply {
		for i := range converted {
			if err := c.applyOne(ctx, &converted[i]); err != nil {
				c.failed++
				fmt.Fprintf(errOut, "error: %s\n", err)
			}
		}
	} else if err := c.print(converted); err != nil {
		return err
	}
	return c.summary()
}

// summary is the command's failure, if any FederatedResourceQuota was not converted or its KarmadaQuota not written.
func (c *convertFRQ) summary() error {
	if c.failed == 0 {
		return nil
	}
	what := "converted"
	if c.apply {
		what = "converted and applied"
	}
	msg := fmt.Sprintf("%d of %d FederatedResourceQuotas were not %s (see above)", c.failed, c.frqs, what)
	if c.droppable && !c.skipInvalid {
		msg += "; --skip-invalid-resources converts them without the resource keys karmada-quota refuses"
	}
	return errors.New(msg)
}

// conversion is one FederatedResourceQuota made into a KarmadaQuota.
type conversion struct {
	from    *policyv1alpha1.FederatedResourceQuota
	quota   *quotav1alpha1.KarmadaQuota
	dropped []string
}

// convertOne makes frq into a KarmadaQuota, or says, against frq's own fields, why karmada-quota would refuse it,
// and whether some of that is resource keys that skip would drop. With skip, the refused resource keys are dropped
// instead (each described in dropped), and a cluster left with no key is dropped too; what cannot be fixed by
// dropping keys (a cluster name twice, a name that is no cluster name) is still refused.
func convertOne(frq *policyv1alpha1.FederatedResourceQuota, skip bool) (conversion, field.ErrorList, bool) {
	spec := quotav1alpha1.KarmadaQuotaSpec{Hard: frq.Spec.Overall.DeepCopy()}
	// origin[i] is the index in spec.staticAssignments of spec.clusters[i], which keeps their order until the end.
	var origin []int
	for i, a := range frq.Spec.StaticAssignments {
		spec.Clusters = append(spec.Clusters, quotav1alpha1.ClusterLimit{Name: a.ClusterName, Hard: a.Hard.DeepCopy()})
		origin = append(origin, i)
	}
	conv := conversion{from: frq}
	for {
		errs := validation.ValidateKarmadaQuotaSpec(&spec, field.NewPath("spec"))
		if len(errs) == 0 {
			break
		}
		if !skip || !dropRefused(&spec, &origin, errs, &conv.dropped) {
			droppable := slices.ContainsFunc(errs, func(e *field.Error) bool {
				_, _, isKey := hardKeyOf(e.Field)
				_, isEmpty := emptyLimitOf(e)
				return isKey || isEmpty
			})
			return conversion{}, asWritten(errs, origin), droppable
		}
	}
	slices.SortFunc(spec.Clusters, func(a, b quotav1alpha1.ClusterLimit) int { return strings.Compare(a.Name, b.Name) })
	conv.quota = &quotav1alpha1.KarmadaQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: quotav1alpha1.GroupVersion.String(), Kind: "KarmadaQuota"},
		ObjectMeta: metav1.ObjectMeta{Namespace: frq.Namespace, Name: frq.Name},
		Spec:       spec,
	}
	return conv, nil, false
}

// dropRefused drops from spec each resource key errs refuses and each cluster errs says limits nothing, and
// describes each in dropped, against the FederatedResourceQuota's fields. It reports whether it dropped anything:
// if not, what is left cannot be fixed by dropping keys.
func dropRefused(spec *quotav1alpha1.KarmadaQuotaSpec, origin *[]int, errs field.ErrorList, dropped *[]string) bool {
	progress := false
	emptyClusters := map[int]bool{}
	for _, e := range errs {
		if i, ok := emptyLimitOf(e); ok {
			emptyClusters[i] = true
			continue
		}
		list, key, ok := hardKeyOf(e.Field)
		if !ok || list >= len(spec.Clusters) {
			continue
		}
		hard := spec.Hard
		if list >= 0 {
			hard = spec.Clusters[list].Hard
		}
		if _, present := hard[key]; !present {
			continue
		}
		where := frqHardPath(list, *origin)
		if e.Type == field.ErrorTypeDuplicate {
			// Two keys for one resource: Karmada enforced both, so the smaller limit is the one that held.
			keep, others := smallestOfSameResource(hard, key)
			for _, k := range others {
				delete(hard, k)
				*dropped = append(*dropped, fmt.Sprintf("%s: the same resource as %s, whose smaller limit %s is kept",
					where.Key(string(k)), keep, quantityOf(hard, keep)))
			}
			progress = progress || len(others) > 0
			continue
		}
		delete(hard, key)
		why := e.Detail
		if why == "" {
			why = e.ErrorBody()
		}
		*dropped = append(*dropped, fmt.Sprintf("%s: %s", where.Key(string(key)), why))
		progress = true
	}
	if len(emptyClusters) > 0 {
		kept := spec.Clusters[:0]
		keptOrigin := (*origin)[:0]
		for i, cl := range spec.Clusters {
			if emptyClusters[i] {
				*dropped = append(*dropped, fmt.Sprintf("%s (cluster %s): it limits nothing", assignmentPath((*origin)[i]), cl.Name))
				progress = true
				continue
			}
			kept = append(kept, cl)
			keptOrigin = append(keptOrigin, (*origin)[i])
		}
		spec.Clusters, *origin = kept, keptOrigin
	}
	return progress
}

func quantityOf(hard corev1.ResourceList, key corev1.ResourceName) string {
	q := hard[key]
	return q.String()
}

// smallestOfSameResource finds, among hard's keys naming the same resource as key (cpu and requests.cpu), the one
// with the smallest limit (of equal ones, the first by name), and the others.
func smallestOfSameResource(hard corev1.ResourceList, key corev1.ResourceName) (corev1.ResourceName, []corev1.ResourceName) {
	canonical, _, err := resources.Canonical(key)
	if err != nil {
		return key, nil
	}
	var same []corev1.ResourceName
	for k := range hard {
		if c, _, err := resources.Canonical(k); err == nil && c == canonical {
			same = append(same, k)
		}
	}
	slices.Sort(same)
	keep := same[0]
	for _, k := range same[1:] {
		if v, kept := hard[k], hard[keep]; v.Cmp(kept) < 0 {
			keep = k
		}
	}
	others := slices.DeleteFunc(same, func(k corev1.ResourceName) bool { return k == keep })
	return keep, others
}

// hardKeyOf reads a validation error's field as a key of spec.hard (list -1) or of spec.clusters[list].hard.
func hardKeyOf(f string) (list int, key corev1.ResourceName, ok bool) {
	list = -1
	rest, found := strings.CutPrefix(f, "spec.hard[")
	if !found {
		var idx string
		if idx, rest, found = cutIndex(f, "spec.clusters["); !found {
			return 0, "", false
		}
		if rest, found = strings.CutPrefix(rest, ".hard["); !found {
			return 0, "", false
		}
		n, err := strconv.Atoi(idx)
		if err != nil {
			return 0, "", false
		}
		list = n
	}
	k, found := strings.CutSuffix(rest, "]")
	if !found || strings.ContainsAny(k, "[]") {
		return 0, "", false
	}
	return list, corev1.ResourceName(k), true
}

// emptyLimitOf reads a validation error as "spec.clusters[i].hard limits nothing".
func emptyLimitOf(e *field.Error) (int, bool) {
	if e.Type != field.ErrorTypeRequired {
		return 0, false
	}
	idx, rest, found := cutIndex(e.Field, "spec.clusters[")
	if !found || rest != ".hard" {
		return 0, false
	}
	i, err := strconv.Atoi(idx)
	return i, err == nil
}

// cutIndex cuts prefix (ending in "[") and the index after it from f.
func cutIndex(f, prefix string) (idx, rest string, found bool) {
	after, found := strings.CutPrefix(f, prefix)
	if !found {
		return "", "", false
	}
	idx, rest, found = strings.Cut(after, "]")
	return idx, rest, found
}

func assignmentPath(i int) *field.Path {
	return field.NewPath("spec", "staticAssignments").Index(i)
}

// frqHardPath is the FederatedResourceQuota's field a KarmadaQuota's hard list comes from: spec.overall (list -1)
// or spec.staticAssignments[origin[list]].hard.
func frqHardPath(list int, origin []int) *field.Path {
	if list < 0 {
		return field.NewPath("spec", "overall")
	}
	return assignmentPath(origin[list]).Child("hard")
}

// asWritten points each error at the FederatedResourceQuota's field it comes from: spec.hard is spec.overall,
// spec.clusters[i] is its staticAssignments entry, and a cluster's name its clusterName.
func asWritten(errs field.ErrorList, origin []int) field.ErrorList {
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		c := *e
		switch {
		case strings.HasPrefix(c.Field, "spec.hard"):
			c.Field = "spec.overall" + strings.TrimPrefix(c.Field, "spec.hard")
		case strings.HasPrefix(c.Field, "spec.clusters["):
			idx, rest, _ := cutIndex(c.Field, "spec.clusters[")
			if i, err := strconv.Atoi(idx); err == nil && i < len(origin) {
				if rest == ".name" {
					rest = ".clusterName"
				}
				c.Field = assignmentPath(origin[i]).String() + rest
			}
		}
		out = append(out, &c)
	}
	return out
}

// manifest is a KarmadaQuota as printed: what `kubectl apply -f` needs, no status, no empty metadata.
type manifest struct {
	APIVersion string                         `json:"apiVersion"`
	Kind       string                         `json:"kind"`
	Metadata   manifestMeta                   `json:"metadata"`
	Spec       quotav1alpha1.KarmadaQuotaSpec `json:"spec"`
}

type manifestMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

func manifestOf(q *quotav1alpha1.KarmadaQuota) manifest {
	return manifest{
		APIVersion: q.APIVersion, Kind: q.Kind,
		Metadata: manifestMeta{Name: q.Name, Namespace: q.Namespace},
		Spec:     q.Spec,
	}
}

func (c *convertFRQ) print(converted []conversion) error {
	out := c.o.streams.Out
	if c.output == "json" {
		return printQuotaList(out, converted)
	}
	for i, conv := range converted {
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		fmt.Fprintf(out, "# From FederatedResourceQuota %s/%s (%s): spec.overall as spec.hard, spec.staticAssignments as spec.clusters.\n",
			conv.from.Namespace, conv.from.Name, frqAPIVersion)
		for _, d := range conv.dropped {
			fmt.Fprintf(out, "# Dropped (--skip-invalid-resources): %s\n", d)
		}
		b, err := yaml.Marshal(manifestOf(conv.quota))
		if err != nil {
			return err
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// printQuotaList prints the KarmadaQuotas as kubectl prints several objects in JSON: a v1 List.
func printQuotaList(out io.Writer, converted []conversion) error {
	list := struct {
		APIVersion string     `json:"apiVersion"`
		Kind       string     `json:"kind"`
		Items      []manifest `json:"items"`
	}{APIVersion: "v1", Kind: "List", Items: []manifest{}}
	for _, conv := range converted {
		list.Items = append(list.Items, manifestOf(conv.quota))
	}
	b, err := json.MarshalIndent(list, "", "    ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

// applyOne creates conv's KarmadaQuota, or, with --overwrite, replaces the spec of the one of its name. One that
// exists already and says the same is left as is, and that is no failure: a second run after a partial one
// converges.
func (c *convertFRQ) applyOne(ctx context.Context, conv *conversion) error {
	want := conv.quota
	get := call{verb: "get", resource: groupResource(quotasResource), kind: "KarmadaQuota", namespace: want.Namespace, name: want.Name}
	var existing quotav1alpha1.KarmadaQuota
	err := c.cl.Get(ctx, client.ObjectKeyFromObject(want), &existing)
	var verb string
	switch {
	case apierrors.IsNotFound(err) && !apiNotServedErr(err):
		verb = "created"
		if c.dryRun != "client" {
			obj := want.DeepCopy()
			if err := c.cl.Create(ctx, obj, c.writeOptions()...); err != nil {
				get.verb = "create"
				return c.explain(get, err)
			}
		}
	case err != nil:
		return c.explain(get, err)
	case sameSpec(existing.Spec, want.Spec):
		verb = "unchanged"
	case !c.overwrite:
		return fmt.Errorf("KarmadaQuota %s/%s exists already and limits otherwise: left as is (--overwrite replaces its spec with the conversion of "+
			"FederatedResourceQuota %s/%s)", want.Namespace, want.Name, conv.from.Namespace, conv.from.Name)
	default:
		verb = "configured"
		if c.dryRun != "client" {
			existing.Spec = want.Spec
			if err := c.cl.Update(ctx, &existing, c.updateOptions()...); err != nil {
				get.verb = "update"
				return c.explain(get, err)
			}
		}
	}
	suffix := ""
	switch c.dryRun {
	case "server":
		suffix = " (server dry run)"
	case "client":
		suffix = " (dry run)"
	}
	fmt.Fprintf(c.o.streams.Out, "karmadaquota.%s/%s %s in namespace %s%s\n", quotav1alpha1.GroupVersion.Group, want.Name, verb, want.Namespace, suffix)
	return nil
}

func (c *convertFRQ) writeOptions() []client.CreateOption {
	opts := []client.CreateOption{client.FieldOwner(fieldManager)}
	if c.dryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	return opts
}

func (c *convertFRQ) updateOptions() []client.UpdateOption {
	opts := []client.UpdateOption{client.FieldOwner(fieldManager)}
	if c.dryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	return opts
}

// sameSpec compares two specs as the apiserver would store them: quantities by value, clusters and groups by name
// in any order (they are list maps), nil and empty alike.
func sameSpec(a, b quotav1alpha1.KarmadaQuotaSpec) bool {
	sortSpec := func(s quotav1alpha1.KarmadaQuotaSpec) quotav1alpha1.KarmadaQuotaSpec {
		s = *s.DeepCopy()
		slices.SortFunc(s.Clusters, func(x, y quotav1alpha1.ClusterLimit) int { return strings.Compare(x.Name, y.Name) })
		slices.SortFunc(s.ClusterGroups, func(x, y quotav1alpha1.ClusterGroupLimit) int { return strings.Compare(x.Name, y.Name) })
		return s
	}
	return equality.Semantic.DeepEqual(sortSpec(a), sortSpec(b))
}

// apiNotServedErr tells a 404 for a resource the server does not serve from a 404 for one missing object.
func apiNotServedErr(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && apiNotServed(status)
}

// explain explains a failed call of convert-frq. Reading FederatedResourceQuotas and writing KarmadaQuotas take
// other rights than the reading commands (the stock roles grant neither), and a server that does not serve
// FederatedResourceQuotas is no Karmada control plane; anything else is explained as for the other commands.
func (c *convertFRQ) explain(cl call, err error) error {
	var status apierrors.APIStatus
	isStatus := errors.As(err, &status)
	switch {
	case apierrors.IsNotFound(err) && apiNotServedErr(err) && cl.kind == policyv1alpha1.ResourceKindFederatedResourceQuota:
		return fmt.Errorf("the server at %s does not serve %s: point --kubeconfig or --context at the karmada-apiserver", c.server, cl.resource)
	case apierrors.IsForbidden(err):
		where := fmt.Sprintf("in namespace %q", cl.namespace)
		if cl.namespace == "" {
			where = "across all namespaces"
		}
		need := "list on federatedresourcequotas.policy.karmada.io"
		if c.apply {
			need += ", and get, create and (for --overwrite) update on karmadaquotas.quota.karmada.io, which, like writing " +
				"ResourceQuotas, is for cluster admins"
		}
		return fmt.Errorf("you may not %s %s %s (the karmada-apiserver said: %s).\nConverting needs %s",
			cl.verb, cl.resource, where, status.Status().Message, need)
	case apierrors.IsConflict(err):
		return fmt.Errorf("KarmadaQuota %s/%s changed while it was being replaced: run the command again (%v)", cl.namespace, cl.name, err)
	case isStatus && (cl.verb == "create" || cl.verb == "update"):
		// The apiserver's or karmada-quota's webhook's refusal, as kubectl shows it.
		return fmt.Errorf("%s KarmadaQuota %s/%s: %v", cl.verb, cl.namespace, cl.name, err)
	}
	return &apiError{call: cl, server: c.server, err: err}
}
