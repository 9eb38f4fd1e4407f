<?php
// The Mailbolt PHP client has no dependencies: require this file and use the
// classes of the Mailbolt namespace (src/<Class>.php, src/Resources/<Class>.php).
declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    $prefix = 'Mailbolt\\';
    if (strncmp($class, $prefix, strlen($prefix)) !== 0) {
        return;
    }
    $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
