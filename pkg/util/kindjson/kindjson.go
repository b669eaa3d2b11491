// Package kindjson is a JSON serializer for informers that read many objects: it finds an object's apiVersion and
// kind without decoding the object twice.
//
// apimachinery's JSON serializer learns the kind of every document it decodes from json.SimpleMetaFactory, which
// runs encoding/json over the whole document into a struct of two fields, before the real decode runs over it
// again. A watch event is decoded that way twice (the event, then the object in it), so an informer listing 100,000
// ResourceBindings spent a fifth of its CPU finding kinds (docs/performance.md, at scale). MetaFactory reads the two
// keys at the top level and skips every other value by its brackets and quotes, unparsed; the decode that follows
// parses and validates the whole document as before. Framer finds where each event of a watch stream ends the same
// way, where apimachinery's JSON framer runs encoding/json's scanner over it twice.
package kindjson

import (
	"bytes"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// MetaFactory reads a JSON object's apiVersion and kind as json.SimpleMetaFactory does, without decoding the rest.
// A document it does not read plainly (not an object; escapes in a top-level key or in those two values; a key
// that encoding/json would also match to them, such as "Kind"; a value of the two that is not an ASCII string; a
// document that does not end after the object) it hands to json.SimpleMetaFactory, so the answer is that of
// SimpleMetaFactory for every well-formed document. A malformed nested value it skips is found by the decode that
// follows.
type MetaFactory struct{}

var _ json.MetaFactory = MetaFactory{}

// Interpret returns the group, version and kind the document names.
func (MetaFactory) Interpret(data []byte) (*schema.GroupVersionKind, error) {
	apiVersion, kind, ok := scanKind(data)
	if !ok {
		return json.DefaultMetaFactory.Interpret(data)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	return &schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind}, nil
}

// NegotiatedSerializer is what serializer.WithoutConversionCodecFactory of scheme negotiates for a client, JSON
// alone, its kinds read by MetaFactory and its watch events framed by Framer: for a REST client that lists and
// watches typed objects of scheme.
func NegotiatedSerializer(scheme *runtime.Scheme) runtime.NegotiatedSerializer {
	// A client decodes with Serializer and StreamSerializer; a strict serializer is the apiserver's to decode with.
	decoder := json.NewSerializerWithOptions(MetaFactory{}, scheme, scheme, json.SerializerOptions{})
	return negotiated{
		WithoutConversionCodecFactory: serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)},
		info: []runtime.SerializerInfo{{
			MediaType:        runtime.ContentTypeJSON,
			MediaTypeType:    "application",
			MediaTypeSubType: "json",
			EncodesAsText:    true,
			Serializer:       decoder,
			StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: decoder, Framer: Framer},
		}},
	}
}

// negotiated offers JSON alone; encoding and decoding to a version are the codec factory's, without conversion.
type negotiated struct {
	serializer.WithoutConversionCodecFactory
	info []runtime.SerializerInfo
}

func (n negotiated) SupportedMediaTypes() []runtime.SerializerInfo { return n.info }

var (
	apiVersionKey = []byte("apiVersion")
	kindKey       = []byte("kind")
)

// scanKind reads the top-level "apiVersion" and "kind" strings of the JSON object data. ok is false where
// json.SimpleMetaFactory could read the document otherwise (see MetaFactory).
func scanKind(data []byte) (apiVersion, kind string, ok bool) {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return "", "", false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return "", "", end(data, i+1)
	}
	var haveVersion, haveKind bool
	for {
		key, next, plain := readString(data, i)
		if !plain {
			return "", "", false
		}
		i = skipSpace(data, next)
		if i == len(data) || data[i] != ':' {
			return "", "", false
		}
		i = skipSpace(data, i+1)
		isVersion := bytes.Equal(key, apiVersionKey)
		switch {
		case isVersion, bytes.Equal(key, kindKey):
			value, next, plain := readString(data, i)
			if !plain || !ascii(value) {
				// encoding/json replaces invalid UTF-8; kinds and versions are ASCII.
				return "", "", false
			}
			if isVersion {
				if haveVersion {
					return "", "", false
				}
				apiVersion, haveVersion = string(value), true
			} else {
				if haveKind {
					return "", "", false
				}
				kind, haveKind = string(value), true
			}
			i = next
		case bytes.EqualFold(key, apiVersionKey), bytes.EqualFold(key, kindKey):
			// encoding/json matches struct fields case-insensitively.
			return "", "", false
		default:
			if i = skipValue(data, i); i < 0 {
				return "", "", false
			}
		}
		i = skipSpace(data, i)
		if i == len(data) {
			return "", "", false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return apiVersion, kind, end(data, i+1)
		default:
			return "", "", false
		}
	}
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// end reports whether nothing but white space follows offset i.
func end(data []byte, i int) bool {
	return skipSpace(data, i) == len(data)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// readString returns the contents of the string that starts at offset i and the offset after it; plain is false
// when there is no string there or it holds an escape or a control character (left to encoding/json).
func readString(data []byte, i int) (contents []byte, next int, plain bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipValue returns the offset after the JSON value that starts at offset i, or -1 where it does not end. It
// follows quotes (and their escapes) and brackets only; the decode after it validates what is inside.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		var b brackets
		end, _ := b.scan(data, i, i)
		return end
	default:
		// A number or a literal: up to the next delimiter.
		j := i
		for j < len(data) && !delimiter(data[j]) {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// brackets is how far a scan of a JSON object or array has come (scan): how deep in brackets, and whether inside a
// string. A frame of a watch stream is scanned in as many pieces as it arrives in (Framer), a nested value at once
// (skipValue).
type brackets struct {
	depth    int
	inString bool
}

// scan goes on over data from offset from with the scan of the object or array whose opening bracket is at offset
// start, b being what the scan of data[start:from] left. It returns the offset after the value, or -1 and the
// offset it reached where data ends first. It follows quotes (and their escapes) and brackets only, and counts
// brackets without matching them; it jumps from quote to quote (bytes.IndexByte), most of a Kubernetes object
// being in its strings.
func (b *brackets) scan(data []byte, start, from int) (end, reached int) {
	i := from
	for i < len(data) {
		if b.inString {
			k := bytes.IndexByte(data[i:], '"')
			if k < 0 {
				return -1, len(data)
			}
			quote := i + k
			i = quote + 1
			if !escaped(data, start, quote) {
				b.inString = false
			}
			continue
		}
		switch data[i] {
		case '"':
			b.inString = true
		case '{', '[':
			b.depth++
		case '}', ']':
			// The value's first byte opens it, so depth is above zero here.
			if b.depth--; b.depth == 0 {
				return i + 1, i + 1
			}
		}
		i++
	}
	return -1, i
}

// skipString returns the offset after the string that starts at offset i, or -1 where it does not end.
func skipString(data []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		quote := j + k
		if !escaped(data, i, quote) {
			return quote + 1
		}
		j = quote + 1
	}
}

// escaped reports whether the quote at offset quote is escaped: preceded, after offset start, by an odd number of
// backslashes.
func escaped(data []byte, start, quote int) bool {
	backslashes := 0
	for b := quote - 1; b > start && data[b] == '\\'; b-- {
		backslashes++
	}
	return backslashes%2 == 1
}

func delimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
