package dist

// CoordinatorEnv marks a worker started by Local: its stdin is a pipe from
// the coordinator that is never written to, so reading it ends (EOF) only
// when the coordinator's end closes, which the system does when the
// coordinator dies, however it dies and on every platform. The binary's
// main follows it (a load whose coordinator is gone has no one to merge
// or judge it, and must not go on against the target).
const CoordinatorEnv = "STAMPEDE_COORDINATOR_STDIN"
