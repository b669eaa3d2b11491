// Package chartschema generates the values.schema.json of karmada-quota's chart from its values.yaml, so that the
// schema Helm validates values against and the documented values cannot drift apart.
//
// Each value's type and default come from values.yaml, its description from the `# --` comment above it (helm-docs'
// convention, which cert-manager's helm-tool follows too). What an example cannot say, constraints.yaml adds: enums
// where the chart branches, bounds the binaries enforce, and the shape of the Kubernetes types passed through to the
// objects. Every object of values.yaml that constraints.yaml does not describe is a group of values and gets
// `additionalProperties: false`, so a misspelt value fails the install instead of being ignored.
//
// Generate refuses a value without a `# --` comment, an empty object or a list whose content nothing describes, and a
// constraint naming a value values.yaml lacks: the schema names exactly the values values.yaml documents, plus
// Helm's "global", which Helm hands to every chart used as a dependency.
package chartschema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// SchemaDraft is the JSON Schema draft of the generated schema; Helm validates values with the draft a schema names.
const SchemaDraft = "http://json-schema.org/draft-07/schema#"

// GlobalKey is the one value the schema knows that values.yaml does not hold: Helm's global values.
const GlobalKey = "global"

// docMarker starts a value's description in values.yaml.
const docMarker = "# --"

//go:embed constraints.yaml
var constraintsYAML []byte

// Generate returns the values.schema.json for the chart whose values.yaml is values.
func Generate(values []byte) ([]byte, error) {
	constraints, err := parseConstraints(constraintsYAML)
	if err != nil {
		return nil, fmt.Errorf("constraints.yaml: %w", err)
	}
	return generate(values, constraints)
}

func generate(values []byte, constraints map[string]*yaml.Node) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("values.yaml must hold one mapping")
	}
	g := &generator{constraints: constraints, used: map[string]bool{}}
	root := &object{}
	root.set("$schema", SchemaDraft)
	root.set("title", "Values of the karmada-quota chart")
	root.set("type", "object")
	props := g.properties(doc.Content[0], "")
	if _, ok := props.values[GlobalKey]; ok {
		g.errs = append(g.errs, fmt.Errorf("values.yaml: %q is Helm's, for values shared with a parent chart", GlobalKey))
	}
	// Helm gives every subchart the parent's global values, an empty object at least: without this entry the chart
	// could not be a dependency of another (an umbrella chart installing Karmada and karmada-quota together).
	global := &object{}
	global.set("description", "Helm's global values, shared with a parent chart. karmada-quota reads none of them.")
	global.set("type", "object")
	props.set(GlobalKey, global)
	root.set("properties", props)
	root.set("additionalProperties", false)
	var unused []string
	for path := range constraints {
		if !g.used[path] {
			unused = append(unused, path)
		}
	}
	sort.Strings(unused)
	for _, path := range unused {
		g.errs = append(g.errs, fmt.Errorf("constraints.yaml describes %s, which values.yaml lacks or does not hold as one value", path))
	}
	if err := errors.Join(g.errs...); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := write(&out, root, ""); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// parseConstraints reads constraints.yaml: under "values", a JSON Schema fragment per dotted value path ("shapes"
// only holds the YAML anchors the fragments reuse).
func parseConstraints(raw []byte) (map[string]*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("must hold one mapping")
	}
	var values *yaml.Node
	top := doc.Content[0]
	for i := 0; i < len(top.Content); i += 2 {
		switch key := top.Content[i].Value; key {
		case "values":
			values = top.Content[i+1]
		case "shapes":
		default:
			return nil, fmt.Errorf("unknown top-level key %q (want shapes and values)", key)
		}
	}
	if values == nil || values.Kind != yaml.MappingNode {
		return nil, errors.New(`"values" must map value paths to schema fragments`)
	}
	out := map[string]*yaml.Node{}
	for i := 0; i < len(values.Content); i += 2 {
		path, fragment := values.Content[i].Value, resolve(values.Content[i+1])
		if fragment.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: a schema fragment must be a mapping", path)
		}
		if _, dup := out[path]; dup {
			return nil, fmt.Errorf("%s is described twice", path)
		}
		out[path] = fragment
	}
	return out, nil
}

type generator struct {
	constraints map[string]*yaml.Node
	used        map[string]bool
	errs        []error
}

// properties describes every value of a group.
func (g *generator) properties(group *yaml.Node, prefix string) *object {
	props := &object{}
	for i := 0; i < len(group.Content); i += 2 {
		key, value := group.Content[i], group.Content[i+1]
		props.set(key.Value, g.value(key, resolve(value), prefix+key.Value))
	}
	return props
}

// value describes one value: a group of values (an object constraints.yaml does not describe), or a value users
// set as a whole.
func (g *generator) value(key, value *yaml.Node, path string) *object {
	s := &object{}
	description, documented := describe(key.HeadComment)
	if documented {
		s.set("description", description)
	}
	constraint, constrained := g.constraints[path]
	g.used[path] = constrained
	if value.Kind == yaml.MappingNode && !constrained {
		if len(value.Content) == 0 {
			g.fail(key, path, "is an empty object: say in constraints.yaml what it holds")
		}
		s.set("type", "object")
		s.set("properties", g.properties(value, path+"."))
		s.set("additionalProperties", false)
		return s
	}
	if !documented {
		g.fail(key, path, "has no `# --` comment")
	}
	switch value.Kind {
	case yaml.ScalarNode:
		switch value.Tag {
		case "!!str":
			s.set("type", "string")
		case "!!int":
			s.set("type", "integer")
		case "!!float":
			s.set("type", "number")
		case "!!bool":
			s.set("type", "boolean")
		default:
			if !has(constraint, "type") {
				g.fail(key, path, fmt.Sprintf("is %s: say its type in constraints.yaml", value.Tag))
			}
		}
	case yaml.SequenceNode:
		s.set("type", "array")
		if !has(constraint, "items") {
			g.fail(key, path, "is a list: say in constraints.yaml what its items are")
		}
	case yaml.MappingNode:
		s.set("type", "object")
	}
	if constrained {
		for i := 0; i < len(constraint.Content); i += 2 {
			s.set(constraint.Content[i].Value, convert(constraint.Content[i+1]))
		}
	}
	s.set("default", convert(value))
	return s
}

func (g *generator) fail(key *yaml.Node, path, problem string) {
	g.errs = append(g.errs, fmt.Errorf("values.yaml:%d: %s %s", key.Line, path, problem))
}

// describe returns the description a head comment gives: the text from its last `# --` line on, lines joined by a
// space, an empty comment line starting a new paragraph.
func describe(comment string) (string, bool) {
	lines := strings.Split(comment, "\n")
	start := -1
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), docMarker) {
			start = i
		}
	}
	if start < 0 {
		return "", false
	}
	var paragraphs [][]string
	current := []string{}
	for i, line := range lines[start:] {
		line = strings.TrimSpace(line)
		if i == 0 {
			line = strings.TrimPrefix(line, docMarker)
		} else {
			line = strings.TrimPrefix(line, "#")
		}
		line = strings.TrimSpace(line)
		if line == "" {
			if len(current) > 0 {
				paragraphs = append(paragraphs, current)
				current = []string{}
			}
			continue
		}
		current = append(current, line)
	}
	if len(current) > 0 {
		paragraphs = append(paragraphs, current)
	}
	texts := make([]string, len(paragraphs))
	for i, p := range paragraphs {
		texts[i] = strings.Join(p, " ")
	}
	text := strings.Join(texts, "\n\n")
	return text, text != ""
}

func has(fragment *yaml.Node, keyword string) bool {
	if fragment == nil {
		return false
	}
	for i := 0; i < len(fragment.Content); i += 2 {
		if fragment.Content[i].Value == keyword {
			return true
		}
	}
	return false
}

// resolve follows YAML aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// convert turns YAML into JSON values, keeping the order of mapping keys.
func convert(n *yaml.Node) any {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		o := &object{}
		for i := 0; i < len(n.Content); i += 2 {
			o.set(n.Content[i].Value, convert(n.Content[i+1]))
		}
		return o
	case yaml.SequenceNode:
		items := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			items = append(items, convert(item))
		}
		return items
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return n.Value
		}
		return v
	}
}

// object is a JSON object that keeps its keys in the order they were set; setting a key again replaces its value
// in place.
type object struct {
	keys   []string
	values map[string]any
}

func (o *object) set(key string, value any) {
	if o.values == nil {
		o.values = map[string]any{}
	}
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = value
}

// write prints v as indented JSON without HTML escaping ("<release>" stays readable).
func write(out *bytes.Buffer, v any, indent string) error {
	const step = "  "
	switch v := v.(type) {
	case *object:
		if len(v.keys) == 0 {
			out.WriteString("{}")
			return nil
		}
		out.WriteString("{\n")
		for i, key := range v.keys {
			out.WriteString(indent + step)
			if err := scalar(out, key); err != nil {
				return err
			}
			out.WriteString(": ")
			if err := write(out, v.values[key], indent+step); err != nil {
				return err
			}
			if i < len(v.keys)-1 {
				out.WriteByte(',')
			}
			out.WriteByte('\n')
		}
		out.WriteString(indent + "}")
	case []any:
		if len(v) == 0 {
			out.WriteString("[]")
			return nil
		}
		if scalars(v) {
			// Short lists of scalars (types, enums, required names) read best on one line.
			out.WriteByte('[')
			for i, item := range v {
				if i > 0 {
					out.WriteString(", ")
				}
				if err := scalar(out, item); err != nil {
					return err
				}
			}
			out.WriteByte(']')
			return nil
		}
		out.WriteString("[\n")
		for i, item := range v {
			out.WriteString(indent + step)
			if err := write(out, item, indent+step); err != nil {
				return err
			}
			if i < len(v)-1 {
				out.WriteByte(',')
			}
			out.WriteByte('\n')
		}
		out.WriteString(indent + "]")
	default:
		return scalar(out, v)
	}
	return nil
}

func scalars(items []any) bool {
	for _, item := range items {
		switch item.(type) {
		case *object, []any:
			return false
		}
	}
	return true
}

func scalar(out *bytes.Buffer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	out.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return nil
}
