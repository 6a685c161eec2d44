// Where a program's first call goes: the Runtime's construction, and a call's first time (the
// lookup and the kernel made ready, which a repeated call skips). What `ktune bench runtime`
// reports of a first call; not part of the public API.
#pragma once

namespace ktune::detail {

struct MissTimes {
  double lookup_ms = 0;   // the lookup chain (a tune on miss included)
  double request_ms = 0;  // the family's compile request: the kernel's source and options
  double key_ms = 0;      // the request's cache key (its text hashed)
  double binary_ms = 0;   // the binary read from the store, or compiled
  double load_ms = 0;     // the module loaded and its functions found (0: loaded before)
  double plan_ms = 0;     // the family's launch plan
};

// The most recent miss of any Runtime of this process (a call's first, the tuned entry of a
// background tune aside); zeros before the first.
MissTimes last_miss_times();

// A Runtime's construction: the database opens on a thread of its own while the device is read,
// and the built-in families are made ready on a third.
struct ConstructTimes {
  double device_ms = 0;     // the device read (on the constructing thread)
  double open_ms = 0;       // the database opened (on its thread)
  double open_wait_ms = 0;  // the constructing thread's wait for it, after the device
  double families_ms = 0;   // the families made ready (on their thread; may end after the
                            // construction, and a first call waits for the family it uses)
};

// The most recent Runtime construction of this process (families_ms once their thread is done).
ConstructTimes last_construct_times();

}  // namespace ktune::detail
