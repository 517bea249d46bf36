{
  "targets": [
    {
      "target_name": "memory_pressure",
      "sources": ["memory-pressure.cc"],
      "cflags_cc": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
