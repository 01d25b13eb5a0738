//go:build !linux

package evloop

import "github.com/stampede-load/stampede/internal/vu"

// Available says the engine can run here.
const Available = false

// Engine does not exist here: New says so, and the goroutine engine runs.
type Engine struct{}

// New reports ErrUnavailable.
func New(Config) (*Engine, error) { return nil, ErrUnavailable }

// Prepare reports ErrUnavailable.
func Prepare(Config) (*Engine, error) { return nil, ErrUnavailable }

// Launch is never reached here.
func (e *Engine) Launch() {}

// Discard is never reached here.
func (e *Engine) Discard() {}

// NewTransport is never reached here.
func (e *Engine) NewTransport() *Transport { return &Transport{} }

// Start is never reached here.
func (e *Engine) Start(*vu.User, *Transport, *vu.Scenario, <-chan struct{}) {}

// Interrupt implements httpc.Transport.
func (t *Transport) Interrupt() {}

type loop struct{}
