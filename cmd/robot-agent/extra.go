package main

// extraSections are top-level config sections owned by optional subsystems;
// config.Load accepts them and the subsystems decode them.
var extraSections = []string{"state", "skills", "identity", "camera", "audio_devices", "duplex", supportSection, audioCodecSection}
