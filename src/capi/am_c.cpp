// placeholder replaced by the C API
