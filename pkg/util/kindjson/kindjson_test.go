package kindjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"testing"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	k8sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"

	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// documents are the inputs both meta factories must read alike: what the apiserver sends, and what it never does.
var documents = []string{
	`{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{"name":"a"}}`,
	`{"metadata":{"name":"a","labels":{"kind":"x","apiVersion":"y"}},"kind":"Pod","apiVersion":"v1"}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a\"}{[","annotations":{"b":"\\"}}}}`,
	` { "kind" : "Pod" , "apiVersion" : "v1" , "spec" : [ 1 , -2.5e3 , true , false , null , "]" , { } , [ ] ] } `,
	`{}`,
	` {} `,
	`{"kind":"Pod"}`,
	`{"apiVersion":"apps/v1"}`,
	`{"apiVersion":"","kind":""}`,
	`{"apiVersion":null,"kind":"Pod"}`,
	`{"apiVersion":1,"kind":"Pod"}`,
	`{"apiVersion":"a/b/c","kind":"Pod"}`,
	`{"kind":"Pod","kind":"Node"}`,
	`{"Kind":"Pod","kind":"Node"}`,
	`{"kind":"Node","KIND":"Pod"}`,
	`{"APIVERSION":"v2","apiVersion":"v1"}`,
	`{"\u006bind":"Pod"}`,
	`{"kind":"P\u006fd"}`,
	"{\"kind\":\"Po\td\"}",
	"{\"\u212aind\":\"Pod\"}",
	`{"kind":"Pod",}`,
	`{"kind":"Pod"} x`,
	`{"kind":"Pod"`,
	`{"kind":"Pod","spec":{"a":[1,2}`,
	`{"kind":"Pod","spec":"unterminated}`,
	`{"kind":"Pod","spec":}`,
	`{"kind" "Pod"}`,
	`{kind:"Pod"}`,
	`[{"kind":"Pod"}]`,
	`"kind"`,
	``,
	`   `,
	`null`,
	`{"a":1}{"kind":"Pod"}`,
}

func TestInterpretAsSimpleMetaFactory(t *testing.T) {
	for _, doc := range documents {
		assertSameAsSimple(t, []byte(doc))
	}
}

func FuzzInterpretAsSimpleMetaFactory(f *testing.F) {
	for _, doc := range documents {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		assertSameAsSimple(t, data)
	})
}

// assertSameAsSimple fails unless MetaFactory reads data as json.SimpleMetaFactory does, or data is not valid JSON
// and MetaFactory's answer is one SimpleMetaFactory gives for some valid document (the decode after it fails).
func assertSameAsSimple(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := k8sjson.DefaultMetaFactory.Interpret(data)
	got, gotErr := MetaFactory{}.Interpret(data)
	if !json.Valid(data) {
		if gotErr == nil && got == nil {
			t.Errorf("%q: no kind and no error", data)
		}
		return
	}
	if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(want, got) {
		t.Errorf("%q: got %v, %v; SimpleMetaFactory: %v, %v", data, got, gotErr, want, wantErr)
	}
}

// TestWatchDecodesAsTheCodecFactory decodes a watch stream of bindings with NegotiatedSerializer and with the codec
// factory controller-runtime's clients use, and compares every event.
func TestWatchDecodesAsTheCodecFactory(t *testing.T) {
	scheme := testScheme(t)
	stream := watchStream(t, 50)
	standard := decodeAll(t, serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}, stream)
	fast := decodeAll(t, NegotiatedSerializer(scheme), stream)
	if len(fast) != 50 || !reflect.DeepEqual(standard, fast) {
		t.Fatalf("decoded %d events, differently from the codec factory (%d): %v", len(fast), len(standard), fast)
	}
	for _, e := range fast {
		if _, ok := e.Object.(*workv1alpha2.ResourceBinding); !ok {
			t.Fatalf("decoded a %T", e.Object)
		}
	}
}

func BenchmarkWatchDecode(b *testing.B) {
	scheme := testScheme(b)
	stream := watchStream(b, 1000)
	for _, c := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{
		{"codec factory", serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}},
		{"kindjson", NegotiatedSerializer(scheme)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				decodeAll(b, c.ns, stream)
			}
		})
	}
}

func testScheme(tb testing.TB) *runtime.Scheme {
	scheme := runtime.NewScheme()
	// Install registers the watch event and list options too (metav1.AddToGroupVersion).
	if err := workv1alpha2.Install(scheme); err != nil {
		tb.Fatal(err)
	}
	return scheme
}

// watchStream is n watch events of placed bindings, as the apiserver writes them.
func watchStream(tb testing.TB, n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		rb := utiltesting.MakeBinding("team", fmt.Sprintf("web-%d-deployment", i)).Replicas(2).
			Requests(utiltesting.List("cpu", "500m", "memory", "64Mi")).Cluster("member1", 1).Cluster("member2", 1).Obj()
		rb.APIVersion, rb.Kind = workv1alpha2.SchemeGroupVersion.String(), "ResourceBinding"
		rb.Labels = map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "6c3f3a52-0000-4000-8000-000000000000"}
		rb.Annotations = map[string]string{"policy.karmada.io/applied-placement": `{"clusterAffinity":{"clusterNames":["member1","member2"]}}`}
		rb.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "karmada-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "work.karmada.io/v1alpha2", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:clusters":{}}}`)}}}
		rb.Spec.Resource.UID = "0e8e6a3a-0000-4000-8000-000000000000"
		rb.Status.Conditions = []metav1.Condition{{Type: workv1alpha2.Scheduled, Status: metav1.ConditionTrue, Reason: "Success", Message: "Binding has been scheduled successfully."}}
		object, err := json.Marshal(rb)
		if err != nil {
			tb.Fatal(err)
		}
		event, err := json.Marshal(metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: object}})
		if err != nil {
			tb.Fatal(err)
		}
		buf.Write(event)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// decodeAll decodes stream as a REST client's watch does with ns.
func decodeAll(tb testing.TB, ns runtime.NegotiatedSerializer, stream []byte) []watch.Event {
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.StreamSerializer == nil {
		tb.Fatal("no JSON stream serializer")
	}
	objects := ns.DecoderToVersion(info.Serializer, workv1alpha2.SchemeGroupVersion)
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), objects)
	var events []watch.Event
	for {
		typ, obj, err := d.Decode()
		if err == io.EOF {
			return events
		}
		if err != nil {
			tb.Fatal(err)
		}
		events = append(events, watch.Event{Type: typ, Object: obj})
	}
}
