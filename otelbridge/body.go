package otelbridge

import (
	"io"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
)

// body ends the logical span when the response body reaches EOF or an
// error, or is closed.
type body struct {
	io.ReadCloser
	c *call
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.c.end(endEOF, nil)
	case err != nil:
		b.c.end(endError, err)
	}
	return n, err
}

func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.c.end(endClose, nil)
	return err
}

// frames wraps a native stream's frame reader (layer.CallResult.Stream) the
// same way: the logical span ends when NextFrame returns io.EOF or an
// error, or when the reader is closed. The first frame with semantic
// output times recourse.client.time_to_first_output.
type frames struct {
	layer.FrameReader
	c *call
}

func (f *frames) NextFrame() (codec.Frame, error) {
	fr, err := f.FrameReader.NextFrame()
	switch {
	case err == nil:
		f.c.frameOutput(&fr)
	case err == io.EOF:
		f.c.end(endEOF, nil)
	case err != nil:
		f.c.end(endError, err)
	}
	return fr, err
}

func (f *frames) Close() error {
	err := f.FrameReader.Close()
	f.c.end(endClose, nil)
	return err
}
