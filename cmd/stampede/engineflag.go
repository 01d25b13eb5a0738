package main

import "github.com/spf13/pflag"

// engineChoice is --engine: what runs closed-model HTTP users (auto: the
// event-loop engine where the plan allows it, internal/run/engine.go).
var engineChoice string

func addEngineFlag(fs *pflag.FlagSet) {
	fs.StringVar(&engineChoice, "engine", "auto", "what runs closed-model HTTP users: auto, loop (event loops; an error if the plan needs more) or goroutines")
}
