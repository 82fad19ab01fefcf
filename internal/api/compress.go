package api

import (
	"compress/zlib"
	"io"
	"sync"

	"google.golang.org/grpc/encoding"
	// gzip is registered for its init: grpc-go decompresses only the
	// encodings registered in the process, and answers a compressed
	// request in the same encoding.
	_ "google.golang.org/grpc/encoding/gzip"
)

// deflateName is the gRPC message encoding of the zlib format (RFC 1950),
// as gRPC's other implementations write it.
const deflateName = "deflate"

// init registers deflate, the other message encoding apps may compress
// with besides gzip: gRPC libraries compress when an app sets a default
// compression on its channel (gzip everywhere; deflate too in grpc-js and
// the C core under Python and Ruby), and grpc-go's server refuses every
// message in an encoding the process has not registered with
// UNIMPLEMENTED ("Decompressor is not installed"). Apps that do not
// compress are unaffected: the server compresses only its answers to
// compressed requests, and never decompresses a message beyond
// MaxRequestSize.
func init() {
	encoding.RegisterCompressor(&deflateCompressor{})
}

// deflateCompressor is an encoding.Compressor for the "deflate" message
// encoding. Writers are pooled, as a zlib writer allocates its window and
// tables (several hundred KiB); readers are small and made per message.
type deflateCompressor struct {
	writers sync.Pool // of *zlib.Writer
}

var _ encoding.Compressor = (*deflateCompressor)(nil)

// Name implements encoding.Compressor.
func (c *deflateCompressor) Name() string { return deflateName }

// Compress implements encoding.Compressor.
func (c *deflateCompressor) Compress(w io.Writer) (io.WriteCloser, error) {
	z, ok := c.writers.Get().(*zlib.Writer)
	if !ok {
		return &deflateWriter{Writer: zlib.NewWriter(w), pool: &c.writers}, nil
	}
	z.Reset(w)
	return &deflateWriter{Writer: z, pool: &c.writers}, nil
}

// Decompress implements encoding.Compressor. gRPC closes the returned
// reader once the message is read.
func (c *deflateCompressor) Decompress(r io.Reader) (io.Reader, error) {
	return zlib.NewReader(r)
}

// deflateWriter returns its zlib writer to the pool when closed.
type deflateWriter struct {
	*zlib.Writer
	pool *sync.Pool
}

// Close flushes the message and returns the writer to the pool.
func (w *deflateWriter) Close() error {
	defer w.pool.Put(w.Writer)
	return w.Writer.Close()
}
