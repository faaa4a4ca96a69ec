"""Hosts: the namespaced test fabric (``netns``) and, later, the Ansible inventory and runner."""
