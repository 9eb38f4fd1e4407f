package dev.mailbolt;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Response headers, looked up case-insensitively. */
public final class Headers {
    private final Map<String, List<String>> map;

    public Headers(Map<String, List<String>> raw) {
        TreeMap<String, List<String>> m = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        if (raw != null) {
            for (Map.Entry<String, List<String>> e : raw.entrySet()) {
                if (e.getKey() != null) m.put(e.getKey(), List.copyOf(e.getValue()));
            }
        }
        this.map = Collections.unmodifiableMap(m);
    }

    /** The first value of a header, or null. */
    public String first(String name) {
        List<String> v = map.get(name);
        return v == null || v.isEmpty() ? null : v.get(0);
    }

    /** Every value of a header (empty when absent). */
    public List<String> all(String name) {
        return map.getOrDefault(name, List.of());
    }

    /** All headers, keyed case-insensitively. */
    public Map<String, List<String>> asMap() {
        return map;
    }

    @Override
    public String toString() {
        return map.toString();
    }
}
