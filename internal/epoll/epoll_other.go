//go:build !linux

package epoll

// Event is one readiness report; none come on this system.
type Event struct {
	Events uint32
	Fd     int32
	Pad    int32
}

// Set is an epoll set; none can be made on this system.
type Set struct{}

// New always fails here.
func New() (*Set, error) { return nil, ErrUnsupported }

func (s *Set) Add(int, *Event) error          { return ErrUnsupported }
func (s *Set) Mod(int, *Event) error          { return ErrUnsupported }
func (s *Set) Del(int) error                  { return ErrUnsupported }
func (s *Set) Wait([]Event, int) (int, error) { return 0, ErrUnsupported }
func (s *Set) Wake() error                    { return ErrUnsupported }
func (s *Set) ClearWake()                     {}
func (s *Set) Close() error                   { return ErrUnsupported }

// Timer is a timerfd; none can be made on this system.
type Timer struct{}

// NewTimer always fails here.
func NewTimer() (*Timer, error)       { return nil, ErrUnsupported }
func (t *Timer) FD() int              { return -1 }
func (t *Timer) Set(int64) error      { return ErrUnsupported }
func (t *Timer) Clear() (bool, error) { return false, ErrUnsupported }

func (s *Set) AddEdge(int, int32, int32, bool) error { return ErrUnsupported }
func (s *Set) ModEdge(int, int32, int32, bool) error { return ErrUnsupported }
