package kindjson

import (
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// Framer splits a JSON watch stream into its events, as json.Framer does, in one pass over each event that follows
// its quotes and brackets and jumps from quote to quote (bytes.IndexByte). json.Framer reads each event with
// encoding/json's Decoder into a RawMessage, which steps its scanner through every byte of the event twice (to
// find where the value ends, then to skip over it); the decode of the event after it validates it whole either way.
//
// Every event of a watch is a JSON object, so a frame must be one (or an array): a stream that holds anything else
// between events fails with an error, as it fails to decode after json.Framer. For a well-formed stream of objects the
// frames are json.Framer's. A malformed one fails too, though maybe one frame later: brackets are counted, not
// matched, so a frame can end where json.Framer would have found an error, and its decode then fails.
var Framer runtime.Framer = framer{}

type framer struct{}

// NewFrameWriter writes as json.Framer does: a JSON stream needs no framing on the way out.
func (framer) NewFrameWriter(w io.Writer) io.Writer { return json.Framer.NewFrameWriter(w) }

// NewFrameReader reads r's frames.
func (framer) NewFrameReader(r io.ReadCloser) io.ReadCloser { return &frameReader{r: r} }

// minRead is the least room a read from the stream is given.
const minRead = 32 << 10

// frameReader reads frames (Read) from the stream r. buf[off:] holds what was read from r and not yet returned as
// a frame; the frame being found starts at off, its scan has reached scanned, where it stands as brackets says, so
// that a frame read in several pieces is scanned once.
type frameReader struct {
	r        io.ReadCloser
	buf      []byte
	off      int
	scanned  int
	brackets brackets
	// remaining is the end of the last frame, when it was larger than the buffer it was read into.
	remaining []byte
	// err is what reading r ended with; it is returned once buf holds no further frame.
	err error
}

// Read copies the next frame into data. A frame larger than data is returned in pieces, with io.ErrShortBuffer
// for every piece but the last, as runtime.Framer's readers do.
func (r *frameReader) Read(data []byte) (int, error) {
	if len(r.remaining) == 0 {
		frame, err := r.next()
		if err != nil {
			return 0, err
		}
		// Until this frame is read whole, next is not called, and buf (which it may move) keeps it.
		r.remaining = frame
	}
	n := copy(data, r.remaining)
	r.remaining = r.remaining[n:]
	if len(r.remaining) > 0 {
		return n, io.ErrShortBuffer
	}
	r.remaining = nil
	return n, nil
}

// Close closes the stream.
func (r *frameReader) Close() error {
	return r.r.Close()
}

// next returns the next frame, a slice of buf, reading the stream until it holds one whole.
func (r *frameReader) next() ([]byte, error) {
	for {
		if r.scanned == r.off {
			// A frame not begun: what separates it from the last is white space.
			r.off = skipSpace(r.buf, r.off)
			r.scanned = r.off
			if r.off < len(r.buf) && r.buf[r.off] != '{' && r.buf[r.off] != '[' {
				return nil, fmt.Errorf("invalid character %q looking for the beginning of a watch event: it must be a JSON object", r.buf[r.off])
			}
		}
		end, reached := r.brackets.scan(r.buf, r.off, r.scanned)
		if end >= 0 {
			frame := r.buf[r.off:end]
			r.off, r.scanned = end, end
			return frame, nil
		}
		r.scanned = reached
		if r.err != nil {
			if errors.Is(r.err, io.EOF) && r.off < len(r.buf) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, r.err
		}
		r.fill()
	}
}

// fill reads more of the stream into buf, first moving the unreturned bytes to its front, and growing it when they
// fill it.
func (r *frameReader) fill() {
	if r.off > 0 {
		n := copy(r.buf, r.buf[r.off:])
		r.buf = r.buf[:n]
		r.scanned -= r.off
		r.off = 0
	}
	if cap(r.buf)-len(r.buf) < minRead {
		grown := make([]byte, len(r.buf), max(2*cap(r.buf), len(r.buf)+minRead))
		copy(grown, r.buf)
		r.buf = grown
	}
	n, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
	r.buf = r.buf[:len(r.buf)+n]
	if err != nil {
		r.err = err
	}
}
