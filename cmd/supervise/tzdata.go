package main

// The time zone database, embedded: a scheduled program's timezone must
// resolve in a container image without /usr/share/zoneinfo (scratch,
// distroless static). Go reads the system's database first when present.
import _ "time/tzdata"
