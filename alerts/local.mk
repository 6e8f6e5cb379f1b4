libvigil_a_SOURCES +=
