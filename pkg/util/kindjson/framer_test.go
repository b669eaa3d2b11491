package kindjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"k8s.io/apimachinery/pkg/runtime"
	k8sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// framerCases are streams json.Framer frames whole: objects (and arrays) with escapes, brackets in strings, nesting
// and white space between them.
var framerCases = map[string]string{
	"one":                  `{"type":"ADDED","object":{"kind":"ResourceBinding"}}`,
	"empty object":         `{}`,
	"newline separated":    "{\"a\":1}\n{\"b\":[1,2,{\"c\":null}]}\n",
	"adjacent":             `{"a":1}{"b":2}[3]`,
	"white space":          " \t\r\n{ \"a\" : [ ] }\r\n\t {\"b\":{}}  \n",
	"brackets in strings":  `{"a":"}]{[","b":"\"}"}` + "\n" + `{"c":"x"}`,
	"escaped backslashes":  `{"a":"\\","b":"\\\\\"}","c":"\\\\"}{"d":"\\\""}`,
	"unicode and escapes":  `{"a":"\u0022}","b":"ünïcødé ✓","c":"\n\t\/"}`,
	"deep":                 `{"a":[[[[{"b":[[{}]]}]]]]}`,
	"long string":          `{"a":"` + string(bytes.Repeat([]byte("x"), 100_000)) + `"}` + "\n" + `{"b":1}`,
	"nothing":              ``,
	"white space only":     " \n\t ",
	"string with brackets": `{"message":"want {\"x\": [1, 2]} got ]]]"}`,
}

// TestFramerAsJSONFramer: for streams of objects, Framer's frames are json.Framer's, however the stream arrives
// (a byte at a time, in halves, with its last read returning data and io.EOF together) and whatever the buffer they
// are read into (smaller than a frame: the frame comes in pieces with io.ErrShortBuffer).
func TestFramerAsJSONFramer(t *testing.T) {
	cases := map[string]string{"watch stream": string(watchStream(t, 20))}
	for name, stream := range framerCases {
		cases[name] = stream
	}
	arrivals := map[string]func(io.Reader) io.Reader{
		"whole":       func(r io.Reader) io.Reader { return r },
		"byte a time": iotest.OneByteReader,
		"halves":      iotest.HalfReader,
		"EOF at once": iotest.DataErrReader,
	}
	for name, stream := range cases {
		want, err := frames(k8sjson.Framer, io.NopCloser(bytes.NewReader([]byte(stream))), 1<<20)
		if err != nil {
			t.Fatalf("%s: json.Framer: %v", name, err)
		}
		for arrival, reader := range arrivals {
			for _, size := range []int{1, 7, 64, 1 << 20} {
				got, err := frames(Framer, io.NopCloser(reader(bytes.NewReader([]byte(stream)))), size)
				if err != nil {
					t.Errorf("%s, %s, read into %d bytes: %v", name, arrival, size, err)
					continue
				}
				if !equalFrames(got, want) {
					t.Errorf("%s, %s, read into %d bytes: framed %q, json.Framer %q", name, arrival, size, got, want)
				}
			}
		}
	}
}

// TestFramerRefuses: a stream that ends inside a frame fails with io.ErrUnexpectedEOF after the frames before it; a
// frame that is not an object or array fails; an error reading the stream is returned.
func TestFramerRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		stream string
		frames int
		err    func(error) bool
	}{
		"ends inside a frame":  {`{"a":1}` + "\n" + `{"b":[1,`, 1, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		"ends inside a string": {`{"a":"x`, 0, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		"a number":             {`{"a":1} 2`, 1, func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
		"a closing bracket":    {`{"a":1}}`, 1, func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
		"a string":             {`"a"`, 0, func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
	} {
		got, err := frames(Framer, io.NopCloser(bytes.NewReader([]byte(c.stream))), 1<<20)
		if len(got) != c.frames || !c.err(err) {
			t.Errorf("%s: %d frames, then %v", name, len(got), err)
		}
	}

	broken := errors.New("connection reset")
	got, err := frames(Framer, io.NopCloser(io.MultiReader(bytes.NewReader([]byte(`{"a":1}{"b":`)), iotest.ErrReader(broken))), 1<<20)
	if len(got) != 1 || !errors.Is(err, broken) {
		t.Errorf("a stream broken after a frame: %d frames, then %v", len(got), err)
	}
}

// FuzzFramerAsJSONFramer: wherever json.Framer frames an object or array, Framer frames the same bytes; where
// json.Framer finds an error, Framer returns one too or a frame that is not JSON (whose decode fails), never a
// frame of valid JSON that differs.
func FuzzFramerAsJSONFramer(f *testing.F) {
	for _, stream := range framerCases {
		if len(stream) < 1000 {
			f.Add([]byte(stream))
		}
	}
	f.Add([]byte(`{"a":[}]{"b":1}`))
	f.Add([]byte(`{"a":"\\\"}"}`))
	f.Fuzz(func(t *testing.T, stream []byte) {
		standard := k8sjson.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
		fast := Framer.NewFrameReader(io.NopCloser(iotest.HalfReader(bytes.NewReader(stream))))
		buf := make([]byte, 64)
		for {
			want, wantErr := frame(standard, buf)
			got, err := frame(fast, buf)
			switch {
			case wantErr == io.EOF:
				if err != io.EOF {
					t.Fatalf("json.Framer's stream ends; Framer's goes on: %q, %v", got, err)
				}
				return
			case wantErr != nil:
				if err == nil && json.Valid(got) {
					t.Fatalf("json.Framer fails (%v); Framer frames valid JSON %q", wantErr, got)
				}
				return
			case want[0] != '{' && want[0] != '[':
				if err == nil {
					t.Fatalf("json.Framer frames %q, not an object; Framer frames %q", want, got)
				}
				return
			case err != nil || !bytes.Equal(got, want):
				t.Fatalf("json.Framer frames %q; Framer %q, %v", want, got, err)
			}
		}
	})
}

func BenchmarkFramer(b *testing.B) {
	stream := watchStream(b, 1000)
	for _, c := range []struct {
		name   string
		framer runtime.Framer
	}{{"json.Framer", k8sjson.Framer}, {"kindjson", Framer}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				if _, err := frames(c.framer, io.NopCloser(bytes.NewReader(stream)), 1<<16); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// frames reads every frame of r with framer, each into a buffer of size bytes (grown as the streaming decoder
// grows its own when a frame does not fit), up to the stream's end; err is nil when it ends where a frame does.
func frames(framer runtime.Framer, r io.ReadCloser, size int) ([][]byte, error) {
	fr := framer.NewFrameReader(r)
	buf := make([]byte, size)
	var all [][]byte
	for {
		f, err := frame(fr, buf)
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return all, err
		}
		all = append(all, f)
	}
}

// frame reads one frame from r into buf, reading on while r returns io.ErrShortBuffer; it returns a copy.
func frame(r io.Reader, buf []byte) ([]byte, error) {
	var f []byte
	for {
		n, err := r.Read(buf)
		f = append(f, buf[:n]...)
		if err == io.ErrShortBuffer {
			continue
		}
		if err != nil {
			return nil, err
		}
		return f, nil
	}
}

func equalFrames(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
