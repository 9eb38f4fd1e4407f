<?php
declare(strict_types=1);

error_reporting(E_ALL);
require __DIR__ . '/../src/autoload.php';
require __DIR__ . '/LiveTestCase.php';
